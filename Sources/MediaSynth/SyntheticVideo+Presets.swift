extension SyntheticVideo {
    /// 14 s at 30 fps, 640×360 (landscape), a bright square (60 px) crossing the frame: left to
    /// right (x 0.2 → 0.8) over 8 s with the camera still, then right to left (0.75 → 0.25) over
    /// 6 s while the camera pans; 1 s GOPs. What a 9:16 crop must follow.
    public static var movingSubject: SyntheticVideo {
        var across = Scene(frames: 240, camera: .still, toneHz: 262)
        across.subject = (from: 0.2, to: 0.8)
        var back = Scene(frames: 180, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 392)
        back.subject = (from: 0.75, to: 0.25)
        var video = SyntheticVideo(width: 640, height: 360, frameRate: 30, scenes: [across, back])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        return video
    }

    /// 14 s at 30 fps, 320×180, that opens in the dark: 3 s black, 3 s out of focus (blur radius
    /// 6), 5 s sharp (6–11 s), 3 s out of focus; the bright object is on screen throughout, 1 s GOPs.
    public static var blackOpening: SyntheticVideo {
        var black = Scene(frames: 90, camera: .still, toneHz: 220)
        black.light = 0
        var soft = Scene(frames: 90, camera: .pan(pixelsPerFrame: 1), transitionIn: .cut, toneHz: 277)
        soft.blur = 6
        var softAgain = Scene(frames: 90, camera: .pan(pixelsPerFrame: -1), transitionIn: .cut, toneHz: 415)
        softAgain.blur = 6
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                black, soft, Scene(frames: 150, camera: .pan(pixelsPerFrame: 1), transitionIn: .cut, toneHz: 330), softAgain,
            ])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        return video
    }

    /// The quick-start sample: a minute of 720p30 "phone footage" with hard cuts, a dissolve,
    /// a fade through black, a shaky shot, a pan and one loud, fast event at 40–43 s.
    public static var sample: SyntheticVideo {
        let fps = 30
        var video = SyntheticVideo(
            width: 1280, height: 720, frameRate: fps,
            scenes: [
                Scene(frames: 8 * fps, camera: .still, toneHz: 196),
                Scene(frames: 7 * fps, camera: .pan(pixelsPerFrame: 3), transitionIn: .cut, toneHz: 247),
                Scene(frames: 9 * fps, camera: .shaky(amplitude: 6), transitionIn: .dissolve(frames: 20), toneHz: 294),
                Scene(frames: 6 * fps, camera: .still, transitionIn: .fadeThroughBlack(frames: 24), toneHz: 330),
                Scene(frames: 12 * fps, camera: .pan(pixelsPerFrame: -2), transitionIn: .cut, toneHz: 392),
                Scene(frames: 10 * fps, camera: .still, transitionIn: .cut, toneHz: 440),
                Scene(frames: 8 * fps, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 523),
            ])
        video.events = [Event(startFrame: 40 * fps, frames: 3 * fps)]
        video.gopSize = fps
        video.encoderOptions = ["preset": "veryfast", "crf": "23"]
        return video
    }

    /// Phone footage as cameras record it: takes of 15–40 s, each hand-held (a slow drift and a
    /// smooth sway), cut together; sensor noise; a loud, fast moment every 45 s; 1 s GOPs at fixed
    /// positions (no scene-cut keyframes, as phone encoders do), in a MOV. `hdr` records it the way
    /// an iPhone does by default: 10-bit HEVC, HLG BT.2020, open GOPs (CRA pictures led by RASL
    /// pictures); otherwise H.264 8-bit BT.709 at 15 Mbit/s, as Android phones and older iPhones do.
    /// At `frameRate` 60 the camera moves as it does at 30, half as far each frame.
    public static func phone(
        minutes: Double, hdr: Bool = false, width: Int = 1920, height: Int = 1080,
        frameRate fps: Int = 30
    ) -> SyntheticVideo {
        var scenes: [Scene] = []
        var total = 0
        let wanted = Int(minutes * 60 * Double(fps))
        var random = SplitMix64(seed: 11)
        while total < wanted {
            let frames = min(wanted - total, (15 + Int(random.next() % 26)) * fps)
            let index = scenes.count
            let drift = [0.0, 1.5, -1.0, 3.0][index % 4] * Double(width) / 1920 * 30 / Double(fps)
            scenes.append(
                Scene(
                    frames: frames, camera: .handheld(drift: drift, sway: 12 * Double(width) / 1920),
                    transitionIn: .cut, toneHz: 180 + Double(index % 12) * 40))
            total += frames
        }
        var video = SyntheticVideo(width: width, height: height, frameRate: fps, scenes: scenes)
        video.events = stride(from: 20 * fps, to: total - 4 * fps, by: 45 * fps).map { Event(startFrame: $0, frames: 3 * fps) }
        video.gopSize = fps
        video.noise = 3
        video.saturation = 0.5
        video.container = "mov"
        if hdr {
            video.videoCodec = "libx265"
            video.pixelFormat = "yuv420p10le"
            video.colorTags = .hlg
            video.bitRate = 10_000_000
            video.encoderOptions = [
                "preset": "ultrafast",
                "x265-params": "keyint=\(fps):min-keyint=\(fps):open-gop=1:scenecut=0:bframes=3:log-level=none",
            ]
        } else {
            video.colorTags = .bt709
            video.bitRate = 15_000_000
            video.encoderOptions = phoneX264Options
        }
        return video
    }

    /// Benchmark footage: 1080p30 H.264 at 15 Mbit/s (a phone's rate) with a cut every 7–13 s,
    /// camera pans and shake, and an event every minute.
    public static func benchmark(minutes: Double) -> SyntheticVideo {
        let fps = 30
        var scenes: [Scene] = []
        var total = 0
        let wanted = Int(minutes * 60 * Double(fps))
        var random = SplitMix64(seed: 7)
        let cameras: [Camera] = [.still, .pan(pixelsPerFrame: 4), .shaky(amplitude: 5), .pan(pixelsPerFrame: -3)]
        let transitions: [Transition] = [.cut, .cut, .cut, .dissolve(frames: 20), .cut, .fadeThroughBlack(frames: 24)]
        while total < wanted {
            let frames = min(wanted - total, (7 + Int(random.next() % 7)) * fps)
            let index = scenes.count
            scenes.append(
                Scene(
                    frames: frames, camera: cameras[index % cameras.count],
                    transitionIn: transitions[index % transitions.count],
                    toneHz: 180 + Double(index % 12) * 40))
            total += frames
        }
        var video = SyntheticVideo(width: 1920, height: 1080, frameRate: fps, scenes: scenes)
        video.events = stride(from: 30 * fps, to: total - 4 * fps, by: 60 * fps).map { Event(startFrame: $0, frames: 3 * fps) }
        video.gopSize = fps
        video.bitRate = 15_000_000
        video.noise = 3
        video.encoderOptions = ["preset": "veryfast"]
        return video
    }
}
