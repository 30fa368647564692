import Foundation
import Media
import MediaSynth
import ServiceTestSupport
import Synchronization

/// Test footage made with the project's own encoder, once per test run, shared between tests.
public enum Fixtures {
    /// The pictures of `path`'s video at `indices` (counted from 0 in the order the decoder gives
    /// them, ascending), decoded until the last of them.
    public static func pictures(of path: String, at indices: [Int]) throws -> [Frame] {
        let input = try InputFile(path: path)
        guard let stream = input.bestStream(.video), let last = indices.last else { return [] }
        let decoder = try Decoder(stream: stream)
        let packet = Packet(), frame = Frame()
        var pictures: [Frame] = []
        var seen = 0
        while seen <= last, try input.read(into: packet) {
            guard packet.streamIndex == stream.index else { continue }
            try decoder.decode(packet, into: frame) { decoded in
                if indices.contains(seen) { pictures.append(try decoded.clone()) }
                seen += 1
            }
        }
        return pictures
    }

    /// Under `.build` (git-ignored), kept between runs: a fixture's file name carries a hash of its
    /// description, so a changed fixture is made anew.
    public static let directory: URL = {
        let url = TestServices.repository.appendingPathComponent(".build/test-fixtures")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        FFmpegLog.quiet()
        // Scratch folders of earlier runs (`scratch-<pid>-…`), not of a run still going on beside this one.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] where name.hasPrefix("scratch-") {
            let pid = name.split(separator: "-").dropFirst().first.flatMap { pid_t($0) }
            if let pid, pid != getpid(), kill(pid, 0) == 0 { continue }
            try? FileManager.default.removeItem(at: url.appendingPathComponent(name))
        }
        return url
    }()

    /// FNV-1a of the fixture's description: stable across runs and machines.
    public static func fingerprint(_ video: SyntheticVideo) -> String {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in "\(SyntheticVideo.writerVersion) \(video)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        return String(hash, radix: 16)
    }

    private static let made = Mutex<Set<String>>([])

    /// The path of fixture `name`, writing it from `video` the first time.
    public static func path(_ name: String, _ video: SyntheticVideo) throws -> String {
        let file = "\(fingerprint(video))-\(name)"
        let path = directory.appendingPathComponent(file).path
        try made.withLock { made in
            guard !made.contains(file) else { return }
            if !FileManager.default.fileExists(atPath: path) {
                let partial = path + ".partial." + (name as NSString).pathExtension
                try video.write(to: partial)
                try FileManager.default.moveItem(atPath: partial, toPath: path)
            }
            made.insert(file)
        }
        return path
    }

    /// `count` bytes of noise, the same for the same seed.
    public static func randomBytes(seed: UInt64, count: Int = 200_000) -> Data {
        var generator = SplitMix64(seed: seed)
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// A fresh, empty scratch folder for one test.
    public static func scratch() -> URL {
        let url = directory.appendingPathComponent("scratch-\(getpid())-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    // MARK: Footage

    /// Shots with every kind of change at known frames: cuts after a still, a pan and a shaky shot,
    /// a 16-frame dissolve, a 20-frame fade through black. 20 s at 30 fps, 320×180.
    public static func scenes(
        codec: String = "libx264", pixelFormat: String = "yuv420p", gop: Int = 30,
        variableFrameRate: Bool = false, options: [String: String] = ["preset": "veryfast"]
    ) -> SyntheticVideo {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: 90, camera: .still, toneHz: 220),
                .init(frames: 90, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 277),
                .init(frames: 120, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 330),
                .init(frames: 90, camera: .still, transitionIn: .dissolve(frames: 16), toneHz: 370),
                .init(frames: 90, camera: .pan(pixelsPerFrame: -2), transitionIn: .fadeThroughBlack(frames: 20), toneHz: 415),
                .init(frames: 60, camera: .still, transitionIn: .cut, toneHz: 494),
                .init(frames: 60, camera: .still, transitionIn: .cut, toneHz: 554),
            ])
        video.videoCodec = codec
        video.pixelFormat = pixelFormat
        video.gopSize = gop
        video.variableFrameRate = variableFrameRate
        video.encoderOptions = options
        return video
    }

    /// Phone-like footage for the copy path: the `scenes` shots with 1 s GOPs and sound that never
    /// repeats (noise bursts throughout), as H.264 (closed GOPs, BT.709 tags) or 10-bit HEVC with
    /// open GOPs (CRA pictures each led by RASL pictures, HLG tags) in a MOV.
    public static func phone(hevc: Bool) -> SyntheticVideo {
        var video = scenes(
            codec: hevc ? "libx265" : "libx264", pixelFormat: hevc ? "yuv420p10le" : "yuv420p", gop: 30,
            options: hevc
                ? ["preset": "ultrafast", "x265-params": "open-gop=1:keyint=30:min-keyint=30:scenecut=0:bframes=3:log-level=none"]
                : ["preset": "veryfast"])
        video.container = "mov"
        video.saturation = 0.5  // colours a camera records (inside BT.709), as the HLG conversion expects
        video.colorTags = hevc ? .hlg : .bt709
        video.events = [.init(startFrame: 0, frames: video.frameCount)]
        return video
    }

    /// 40 s of calm shots with one planted event (fast motion and loud bursts) at 25.0–27.5 s.
    public static var event: SyntheticVideo {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: (0..<8).map { index in
                SyntheticVideo.Scene(frames: 150, camera: index % 2 == 0 ? .still : .pan(pixelsPerFrame: 1), toneHz: 200 + Double(index) * 50)
            })
        video.events = [.init(startFrame: 750, frames: 75)]
        video.gopSize = 30
        return video
    }

    /// A short clip with one cut in the middle (1.5 s + 1.5 s).
    public static func clip(
        codec: String, pixelFormat: String = "yuv420p", audio: SyntheticVideo.AudioCodec?, container: String?,
        options: [String: String] = [:], frames: Int = 45
    ) -> SyntheticVideo {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: frames, camera: .still, toneHz: 300),
                .init(frames: frames, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 450),
            ])
        video.videoCodec = codec
        video.pixelFormat = pixelFormat
        video.audio = audio
        video.container = container
        video.encoderOptions = options
        video.gopSize = 15
        return video
    }
}
