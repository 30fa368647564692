import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("Scene detection", .heavy)
struct SceneDetectionTests {
    /// The same shots encoded several ways: each scene change must be found within ±2 frames,
    /// of the right kind, and nothing else (the shaky and panning shots stay whole).
    static let encodings: [(name: String, video: SyntheticVideo)] = [
        ("h264-gop30.mp4", Fixtures.scenes()),
        ("h264-gop250.mp4", Fixtures.scenes(gop: 250)),
        ("h264-vfr.mkv", Fixtures.scenes(variableFrameRate: true)),
        ("hevc.mp4", Fixtures.scenes(codec: "libx265", gop: 30, options: ["preset": "ultrafast", "x265-params": "log-level=none"])),
        (
            "vp9.webm",
            {
                var v = Fixtures.scenes(codec: "libvpx-vp9", gop: 30, options: ["deadline": "realtime", "cpu-used": "8"])
                v.audio = .opus
                return v
            }()
        ),
    ]

    @Test("finds every change within ±2 frames", arguments: encodings.map(\.name))
    func findsChanges(name: String) throws {
        let video = try #require(Self.encodings.first { $0.name == name }?.video)
        let path = try Fixtures.path(name, video)
        let analysis = try HighlightEngine().analyze(input: path)
        let changes = analysis.changes
        let expected = video.boundaryTimes
        let kinds: [TransitionKind] = [.cut, .cut, .dissolve, .fade, .cut, .cut]
        let frame = 1.0 / Double(video.frameRate)
        #expect(changes.count == expected.count, "found \(changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })")
        for (index, time) in expected.enumerated() {
            let nearest = changes.min { abs($0.time - time) < abs($1.time - time) }
            let match = try #require(nearest, "no change near \(time)")
            // VFR frames are 0.75 or 1.25 nominal intervals: ±2 frames is at most 2.5 nominal intervals.
            let tolerance = (video.variableFrameRate ? 2.5 : 2) * frame + 1e-6
            #expect(abs(match.time - time) <= tolerance, "change \(index) at \(match.time), expected \(time)")
            #expect(match.kind == kinds[index], "change \(index) at \(time) is \(match.kind)")
        }
    }

    /// Beyond 4K the scanner decodes one stream of pictures at a time and frees each decoder after
    /// its GOP (`MediaLimits.leanDecodingBytes`); forced here on small fixtures, it must find the
    /// same changes, of the same kinds, as the normal pass.
    @Test("the lean pass for pictures beyond 4K finds the same changes", arguments: ["h264-gop30.mp4", "hevc.mp4", "scene-open-gops.mov"])
    func leanPassAgrees(name: String) throws {
        let video = try #require((Self.encodings + [("scene-open-gops.mov", Self.openGOPs(hevc: true))]).first { $0.name == name }?.video)
        let path = try Fixtures.path(name, video)
        var lean = HighlightSettings()
        lean.limits.leanDecodingBytes = 0
        let normal = try HighlightEngine().analyze(input: path)
        let leanAnalysis = try HighlightEngine().analyze(input: path, settings: lean)
        let frame = 1.0 / Double(video.frameRate)
        #expect(normal.changes.count == video.boundaryTimes.count)
        #expect(
            leanAnalysis.changes.count == normal.changes.count,
            "lean found \(leanAnalysis.changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })")
        for (a, b) in zip(normal.changes, leanAnalysis.changes) {
            #expect(abs(a.time - b.time) <= frame + 1e-6 && a.kind == b.kind, "normal \(a.time) \(a.kind), lean \(b.time) \(b.kind)")
        }
        #expect(leanAnalysis.totalFrames == normal.totalFrames)
    }

    /// Hard material, one rule each: what happens inside a shot must not cut it (a flash, a quick
    /// zoom, a violent shake), and what joins two shots must be found, of its kind, on
    /// its frame (a two-second dissolve across a keyframe, a fade through white, a jump cut that
    /// keeps the colours, an insert that returns to the first shot). 320 × 180 at 30 fps, one
    /// keyframe a second; every expected change follows from the description.
    static let hardMaterial: [(name: String, video: SyntheticVideo, kinds: [TransitionKind])] = {
        func video(_ scenes: [SyntheticVideo.Scene], effects: [SyntheticVideo.Effect] = []) -> SyntheticVideo {
            var v = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: scenes)
            v.gopSize = 30
            v.audio = nil
            v.effects = effects
            return v
        }
        let still = SyntheticVideo.Scene(frames: 150, camera: .still)
        let next = SyntheticVideo.Scene(frames: 90, camera: .handheld(drift: 0.5, sway: 4))
        return [
            // A two-frame flash at 2.33 s, then a cut at 5 s.
            ("flash", video([still, next], effects: [.init(.flash, startFrame: 70, frames: 2)]), [.cut]),
            // A zoom to 2.5× over 10 frames at 2 s, held.
            ("zoom", video([still, next], effects: [.init(.zoom(factor: 2.5), startFrame: 60, frames: 10)]), [.cut]),
            // A whip pan: the camera swings 320 px (a picture's width) over 8 eased frames at 2 s,
            // motion-blurred by each frame's travel, and stops sharp.
            ("whip", video([still, next], effects: [.init(.whip(pixels: 320), startFrame: 60, frames: 8)]), [.cut]),
            // Quicker ones at one speed from start to stop (a motorised zoom, an editor's move): a
            // zoom to 2.5× over 5 frames and a whip pan over 5. (The burst rule itself is tested
            // on pictures built for it in SceneDetectorRuleTests: these painted scenes have too
            // little texture for their steps to reach a cut's size.)
            ("snap-zoom", video([still, next], effects: [.init(.zoom(factor: 2.5), startFrame: 60, frames: 5, eased: false)]), [.cut]),
            ("snap-whip", video([still, next], effects: [.init(.whip(pixels: 320), startFrame: 60, frames: 5, eased: false)]), [.cut]),
            // A cut made over two frames (one blended frame between the shots) is still a cut.
            ("blended-cut", video([still, .init(frames: 90, camera: .still, transitionIn: .dissolve(frames: 2))]), [.cut]),
            // A camera shaken by up to 12 px every frame.
            ("shake", video([.init(frames: 150, camera: .shaky(amplitude: 12)), next]), [.cut]),
            // A 60-frame dissolve centred on frame 150, a keyframe: it spans GOPs 4 and 5.
            ("dissolve-2s", video([still, .init(frames: 150, camera: .still, transitionIn: .dissolve(frames: 60))]), [.dissolve]),
            // A 20-frame fade through white.
            (
                "fade-white", video([still, .init(frames: 120, camera: .pan(pixelsPerFrame: 1), transitionIn: .fadeThroughWhite(frames: 20))]),
                [.fade]
            ),
            // The same as an iPhone's HDR video (10-bit HEVC, HLG, open GOPs): its white is the HDR
            // reference white (75 % HLG, code 180 of 255), which the detector must read as white.
            (
                "fade-white-hlg",
                iPhoneHDR(video([still, .init(frames: 120, camera: .pan(pixelsPerFrame: 1), transitionIn: .fadeThroughWhite(frames: 20))])),
                [.fade]
            ),
            // The 2 s dissolve across a keyframe as an iPhone's HDR video: the blend must still
            // read as a straight one once the HLG pictures are tone-mapped (highlights clipped,
            // not rolled off: it was placed 3 frames late), across the leading pictures too.
            ("dissolve-2s-hlg", iPhoneHDR(video([still, .init(frames: 150, camera: .still, transitionIn: .dissolve(frames: 60))])), [.dissolve]),
            // The same place filmed again, reframed by 64 px: same texture, same colours.
            ("jump-cut", video([still, .init(frames: 120, camera: .still, look: 0, shift: 64)]), [.cut]),
            // A → B → A: the insert's two cuts, the second back to the first shot's look.
            (
                "insert", video([.init(frames: 120), .init(frames: 60, camera: .pan(pixelsPerFrame: 2)), .init(frames: 120, look: 0, shift: 8)]),
                [.cut, .cut]
            ),
            // The same insert inside one GOP, as x264 codes it with its scene-cut detection on and
            // 250-frame GOPs: no keyframe is allowed within 126 frames of the last (half the GOP
            // and one), so each cut (frames 60 and 100) is an intra picture that is no keyframe,
            // and the keyframes either side (0 and 250) are alike. With a camera's noise every
            // picture is large, so neither intra picture stands out from the others by its size.
            (
                "insert-in-long-gop",
                {
                    var v = video([.init(frames: 60), .init(frames: 40, camera: .shaky(amplitude: 6)), .init(frames: 200, look: 0, shift: 8)])
                    v.noise = 30
                    v.gopSize = 250
                    v.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=250:min-keyint=250:scenecut=40"]
                    return v
                }(), [.cut, .cut]
            ),
        ]
    }()

    @Test("hard material: each rule on a fixture made for it", arguments: hardMaterial.map(\.name))
    func hardMaterialRule(name: String) throws {
        let (_, video, kinds) = try #require(Self.hardMaterial.first { $0.name == name })
        let path = try Fixtures.path("scene-\(name).\(video.videoCodec == "libx265" ? "mov" : "mp4")", video)
        let changes = try HighlightEngine().analyze(input: path).changes
        let described = changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) }
        #expect(changes.count == kinds.count, "found \(described)")
        let frame = 1.0 / Double(video.frameRate)
        for (index, time) in video.boundaryTimes.enumerated() where index < kinds.count {
            let nearest = try #require(changes.min { abs($0.time - time) < abs($1.time - time) }, "no change near \(time)")
            #expect(abs(nearest.time - time) <= 2 * frame + 1e-6, "change \(index) at \(nearest.time), expected \(time): \(described)")
            #expect(nearest.kind == kinds[index], "change \(index) at \(time) is \(nearest.kind)")
        }
    }

    /// A jump cut on the frame after a keyframe, in a shot that pans on either side of it: the
    /// camera is back where it was 1.7 s before (200 px into the 302 px pan, the subject at its
    /// starting place), so the keyframes on either side of the GOP hold the same scene, a pan
    /// apart, as every pair before them (no colour, layout or structure jump), and the encoder
    /// finds the jumped-to picture in the keyframe (no packet spike). Only the keyframe's sample
    /// run, which takes the jump, moves far more than those around it.
    static let jumpAfterKeyframe = phoneH264([
        .init(frames: 151, camera: .handheld(drift: 0.5, sway: 4)),
        .init(frames: 120, camera: .handheld(drift: 0.5, sway: 4), transitionIn: .cut, look: 0, shift: 64),
    ])

    /// `scenes` at 320 × 180 and 30 fps, silent, encoded as a phone encodes H.264: a keyframe every
    /// second and none at the cuts (x264's own scene-cut detection off).
    static func phoneH264(_ scenes: [SyntheticVideo.Scene]) -> SyntheticVideo {
        var video = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: scenes)
        video.gopSize = 30
        video.audio = nil
        video.encoderOptions = SyntheticVideo.phoneX264Options
        return video
    }

    /// The video's keyframe times, and the options its encoder wrote with the first picture.
    static func keyframes(in path: String) throws -> (times: [Double], options: EncoderOptions?) {
        let input = try InputFile(path: path)
        let stream = try #require(input.bestStream(.video))
        let packet = Packet()
        var times: [Double] = []
        var options: EncoderOptions?
        var first = true
        while try input.read(into: packet) {
            guard packet.streamIndex == stream.index else { continue }
            if first { options = stream.encoderOptions(firstPacket: packet) }
            first = false
            if packet.isKeyframe, let pts = packet.pts { times.append(stream.seconds(pts)) }
        }
        return (times, options)
    }

    /// Changes as a test failure shows them: time and kind.
    static func describe(_ changes: [SceneChange]) -> String { "\(changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })" }

    /// Whether `changes` is one change of `kind` within ±2 frames of `time`, and nothing else.
    static func isOnly(_ kind: TransitionKind, at time: Double, in changes: [SceneChange], frameRate: Int) -> Bool {
        changes.count == 1 && changes.allSatisfy { $0.kind == kind && abs($0.time - time) <= 2 / Double(frameRate) + 1e-6 }
    }

    /// Whether `changes` are as many as `times`, each time with a change of its kind (`kinds`, in
    /// the same order) within ±2 frames of it.
    static func isExactly(_ kinds: [TransitionKind], at times: [Double], in changes: [SceneChange], frameRate: Int) -> Bool {
        changes.count == times.count
            && zip(times, kinds).allSatisfy { time, kind in
                changes.contains { abs($0.time - time) <= 2 / Double(frameRate) + 1e-6 && $0.kind == kind }
            }
    }

    /// The analysis of `path`, with the scanner's settings changed by `change`.
    static func analysis(of path: String, scanning change: (inout VideoScanner.Settings) -> Void = { _ in }) throws -> Analysis {
        var settings = HighlightSettings()
        change(&settings.scanning)
        return try HighlightEngine().analyze(input: path, settings: settings)
    }

    /// The changes found in `path`, with the scanner's settings changed by `change`.
    static func changes(in path: String, scanning change: (inout VideoScanner.Settings) -> Void = { _ in }) throws -> [SceneChange] {
        try analysis(of: path, scanning: change).changes
    }

    @Test(
        "a jump cut just after a keyframe, between keyframes alike, is found from the sample run's activity; the frames up to its picture are decoded to see it"
    )
    func jumpAfterKeyframe() throws {
        let video = Self.jumpAfterKeyframe
        let path = try Fixtures.path("scene-jump-after-keyframe.mp4", video)
        let expected = try #require(video.boundaryTimes.first)
        let found = try Self.changes(in: path)
        #expect(
            Self.isOnly(.cut, at: expected, in: found, frameRate: video.frameRate), "found \(Self.describe(found)), expected a cut at \(expected)")
        // Without the probe nothing else looks at that GOP (the fixture exercises it).
        let unprobed = try Self.changes(in: path) { $0.activityJumpFloor = .infinity }
        #expect(unprobed.isEmpty, "found \(Self.describe(unprobed))")
    }

    /// A keyframe the encoder's scene-cut detection put on a cut, 25 frames after the last (x264's
    /// own rhythm: 30-frame GOPs, a keyframe on any cut), ends a GOP whose camera starts to swing
    /// on its keyframe and swings on to the cut (5 pixels a frame, blurred): that keyframe moves
    /// far more than the still keyframes either side, and no packet stands out.
    static var earlyKeyAfterWhip: SyntheticVideo {
        var video = phoneH264([.init(frames: 85, camera: .still), .init(frames: 65, camera: .still, transitionIn: .cut)])
        video.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=30:min-keyint=5:scenecut=40"]
        video.effects = [.init(.whip(pixels: 125), startFrame: 60, frames: 25, eased: false)]
        return video
    }

    @Test("a cut the encoder put a keyframe on is kept when the GOP before it opens in a swing of the camera (probed for a jump cut, nothing found)")
    func earlyKeyAfterWhip() throws {
        let video = Self.earlyKeyAfterWhip
        let path = try Fixtures.path("scene-early-key-after-whip.mp4", video)
        let expected = try #require(video.boundaryTimes.first)
        // The fixture is what it says: a keyframe on the cut's first frame, and one where the swing starts.
        let (keys, _) = try Self.keyframes(in: path)
        let frame = 1 / Double(video.frameRate)
        let swing = try #require(video.effects.first).startFrame
        #expect(
            keys.contains { abs($0 - expected) < frame / 2 } && keys.contains { abs($0 - Double(swing) * frame) < frame / 2 },
            "keyframes at \(keys)")
        let found = try Self.changes(in: path)
        #expect(
            Self.isOnly(.cut, at: expected, in: found, frameRate: video.frameRate), "found \(Self.describe(found)), expected a cut at \(expected)")
    }

    /// A slow pan (a pixel a frame) over the painted ground, which is smooth: over ten or twenty
    /// frames its pictures are nearly blends of the first and the last, so the detector's drift
    /// test says a dissolve may be under way at the end of every GOP. With no dissolve found, it is
    /// followed for as long as the longest dissolve lasts, not through the whole video.
    @Test(
        "a slow pan that drifts like a dissolve is not followed GOP after GOP: no change, and its GOPs are sampled once the longest dissolve has passed"
    )
    func slowPanIsNotFollowed() throws {
        let video = Self.phoneH264([.init(frames: 600, camera: .pan(pixelsPerFrame: 1))])
        let path = try Fixtures.path("scene-slow-pan.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        #expect(analysis.changes.isEmpty, "found \(analysis.changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })")
        // Every GOP sampled; the first decoded (a moving shot judged with no history), the drift
        // followed from it for at most `longestDrift` seconds and a GOP, and the last GOP (no
        // keyframe after it), with the one before it where the drift is under way at its start.
        let settings = VideoScanner.Settings()
        let gops = video.frameCount / video.gopSize
        let followed = Int(settings.longestDrift.rounded(.up)) + 2
        let bound = gops * (settings.sampleRunPackets + 2) + (followed + 2) * video.gopSize
        #expect(analysis.decodedFrames <= bound, "decoded \(analysis.decodedFrames) of \(analysis.totalFrames), bound \(bound)")
        var unbounded = HighlightSettings()
        unbounded.scanning.longestDrift = .infinity
        let followedThrough = try HighlightEngine().analyze(input: path, settings: unbounded)
        #expect(followedThrough.decodedFrames > bound, "without the bound: decoded \(followedThrough.decodedFrames) (the fixture exercises it)")
    }

    /// A two-second dissolve that begins on a keyframe as the camera whip-pans (the whip over its
    /// first ten frames), after a still GOP: the keyframes' colours send the GOP from there to be
    /// decoded, and its run begins inside the whip, whose blur hides the blend. Its start is
    /// judged once the whip has stopped, where the blend is seen under way, so the GOP before is
    /// decoded too and the dissolve's start is read from the still shot. Judged from the run's
    /// first frame, the blend is missed there and the dissolve is placed from where the whip
    /// stopped: late.
    static let dissolveUnderWhip: SyntheticVideo = {
        var video = phoneH264([.init(frames: 150, camera: .still), .init(frames: 150, camera: .still, transitionIn: .dissolve(frames: 60))])
        video.effects = [.init(.whip(pixels: 320), startFrame: 120, frames: 10)]
        return video
    }()

    @Test(
        "a dissolve that begins on a keyframe under a whip pan is placed on its middle: the run's start is judged after the whip, and the GOP before is decoded"
    )
    func dissolveUnderWhip() throws {
        let video = Self.dissolveUnderWhip
        let path = try Fixtures.path("scene-dissolve-under-whip.mp4", video)
        let expected = try #require(video.boundaryTimes.first)
        let found = try Self.changes(in: path)
        #expect(
            Self.isOnly(.dissolve, at: expected, in: found, frameRate: video.frameRate),
            "found \(Self.describe(found)), expected a dissolve at \(expected)")
        let late = try Self.changes(in: path) { $0.longestStartBurst = 0 }
        #expect(
            !Self.isOnly(.dissolve, at: expected, in: late, frameRate: video.frameRate),
            "judged from the run's first frame: \(Self.describe(late)) (the fixture exercises the rule)")
    }

    /// Grain renewed every 12 frames: in the still shot after the cut each renewal is coded nearly
    /// whole between tiny pictures, as a transcoded file's old keyframes are, so every GOP there
    /// holds a packet spike that is no change, standing far above the hand-held shot's packets.
    /// The first is decoded to learn that; the rest are the content's rhythm and are not.
    @Test("a source's own refresh pictures: one GOP decoded to learn them, not one a GOP")
    func refreshRhythm() throws {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [.init(frames: 165, camera: .handheld(drift: 0.5, sway: 4)), .init(frames: 255, camera: .still)])
        video.gopSize = 30
        video.audio = nil
        video.noise = 6
        video.noiseHeldFrames = 12
        let path = try Fixtures.path("scene-refresh-rhythm.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        let changes = analysis.changes
        #expect(changes.count == 1, "found \(changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })")
        let cut = try #require(changes.first), expected = try #require(video.boundaryTimes.first)
        #expect(
            abs(cut.time - expected) <= 2 / Double(video.frameRate) + 1e-6 && cut.kind == .cut,
            "cut at \(cut.time), \(cut.kind); expected at \(expected)")
        // Every GOP sampled (one more than the keyframe interval gives: the encoder starts one on
        // the cut); at most two decoded whole: the opening one (a moving shot, judged with no
        // history) and the first with a spike.
        let gops = video.frameCount / video.gopSize + 1
        let bound = gops * (VideoScanner.Settings().sampleRunPackets + 2) + 2 * video.gopSize
        #expect(analysis.decodedFrames <= bound, "decoded \(analysis.decodedFrames) of \(analysis.totalFrames), bound \(bound)")
    }

    /// An iPhone's HDR video: 10-bit HEVC whose CRA keyframes come before up to four pictures
    /// shown ahead of them (open GOPs: leading pictures, which refer to the GOP before). The cuts,
    /// 4, 1 and 3 frames before a keyframe, fall among them.
    static func openGOPs(hevc: Bool) -> SyntheticVideo {
        let video = phoneH264([
            .init(frames: 86, camera: .pan(pixelsPerFrame: 2)),
            .init(frames: 63, camera: .shaky(amplitude: 3), transitionIn: .cut),
            .init(frames: 88, camera: .pan(pixelsPerFrame: -2), transitionIn: .cut),
            .init(frames: 63, camera: .still, transitionIn: .cut),
        ])
        return hevc ? iPhoneHDR(video) : video
    }

    /// `video` (1 s GOPs) encoded as an iPhone records HDR: 10-bit HEVC, HLG, a CRA keyframe every
    /// second with up to four leading pictures (open GOPs).
    static func iPhoneHDR(_ video: SyntheticVideo) -> SyntheticVideo {
        var video = video
        video.videoCodec = "libx265"
        video.pixelFormat = "yuv420p10le"
        video.colorTags = .hlg
        video.encoderOptions = ["preset": "ultrafast", "x265-params": "keyint=30:min-keyint=30:open-gop=1:scenecut=0:bframes=4:log-level=none"]
        return video
    }

    @Test("open GOPs: a cut among a keyframe's leading pictures is placed on its frame, and each keyframe's motion is measured")
    func openGOPs() throws {
        let video = Self.openGOPs(hevc: true)
        let path = try Fixtures.path("scene-open-gops.mov", video)
        // The fixture is what it says: each cut's first frame is one of the next keyframe's leading
        // pictures (counted in the file: the packets after a keyframe shown before it).
        let input = try InputFile(path: path)
        let stream = try #require(input.bestStream(.video))
        let packet = Packet()
        var leading: [(key: Double, count: Int)] = []
        while try input.read(into: packet) {
            guard packet.streamIndex == stream.index, let pts = packet.pts else { continue }
            let t = stream.seconds(pts)
            if packet.isKeyframe {
                leading.append((t, 0))
            } else if let last = leading.last, t < last.key {
                leading[leading.count - 1].count += 1
            }
        }
        let frame = 1.0 / Double(video.frameRate)
        for time in video.boundaryTimes {
            let next = try #require(leading.first { $0.key > time + 1e-6 })
            #expect(Int(((next.key - time) / frame).rounded()) <= next.count, "the cut at \(time) is not a leading picture of \(next)")
        }

        let analysis = try HighlightEngine().analyze(input: path)
        let changes = analysis.changes
        let described = changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) }
        #expect(changes.count == video.boundaryTimes.count, "found \(described)")
        for time in video.boundaryTimes {
            let nearest = try #require(changes.min { abs($0.time - time) < abs($1.time - time) }, "no change near \(time)")
            #expect(abs(nearest.time - time) <= 2 * frame + 1e-6 && nearest.kind == .cut, "expected a cut at \(time): \(described)")
        }
        // Each keyframe's sample sees the first picture shown after it (a leading picture cannot be
        // decoded from the keyframe alone).
        try Self.expectMotionAsInClosedGOPs(analysis)
    }

    /// The moving shots of `openGOPs` are measured in `analysis` as they are in the same shots
    /// coded as H.264 with closed GOPs: each whole second's activity within a factor of 2.
    static func expectMotionAsInClosedGOPs(_ analysis: Analysis) throws {
        let video = openGOPs(hevc: false)
        let closed = try HighlightEngine().analyze(input: try Fixtures.path("scene-closed-gops.mp4", video))
        let moving = analysis.seconds.indices.filter { second in
            let start = Double(second), end = start + 1
            // Whole seconds inside a moving shot (the last shot is still).
            return end <= video.boundaryTimes[2] && !video.boundaryTimes.contains { $0 > start && $0 < end }
        }
        #expect(moving.count >= 5)
        for second in moving {
            let open = analysis.seconds[second].activity, reference = closed.seconds[second].activity
            #expect(
                reference > 0.5 && open >= 0.5 * reference && open <= 2 * reference,
                "second \(second): activity \(open) against \(reference) with closed GOPs")
        }
    }

    @Test("the packets read as intra pictures that are no keyframes are the cuts x264 coded so inside a long GOP")
    func intraPicturesInsideGOP() throws {
        let video = try #require(Self.hardMaterial.first { $0.name == "insert-in-long-gop" }?.video)
        let input = try InputFile(path: try Fixtures.path("scene-insert-in-long-gop.mp4", video))
        let stream = try #require(input.bestStream(.video))
        let bitstream = try #require(stream.bitstream)
        let packet = Packet()
        var intra: [Double] = [], keyframes = 0
        while try input.read(into: packet) {
            guard packet.streamIndex == stream.index, let pts = packet.pts else { continue }
            if packet.isKeyframe { keyframes += 1 }
            if bitstream.isIntraPicture(packet.bytes) { intra.append(stream.seconds(pts)) }
        }
        // One every GOP: the first frame's and the 250th's.
        #expect(keyframes == video.frameCount / video.gopSize + 1)
        let frame = 1 / Double(video.frameRate)
        #expect(
            intra.count == video.boundaryTimes.count
                && zip(intra.sorted(), video.boundaryTimes).allSatisfy { abs($0 - $1) < frame / 2 }, "intra pictures at \(intra)")
    }

    /// A fade through white over frames 85–115 and a cut at frame 210, 1 s GOPs, and one more
    /// keyframe where an encoder restarting on a change of picture (x264) might put it: on the
    /// fade's last frames or just after it (frames 112–118). Keyframes then fall 2 frames before
    /// the cut at the latest (key 118: 6.933 s), where the sample run of the keyframe before the
    /// cut measures the cut itself as its motion, and 1 frame after the fade (key 116), where the
    /// GOP before opens on the fade and its early keyframe is no cut to trust unseen.
    static func earlyKeyOnFade(at key: Int) -> SyntheticVideo {
        var video = phoneH264([
            .init(frames: 100, camera: .still),
            .init(frames: 110, camera: .still, transitionIn: .fadeThroughWhite(frames: 30)),
            .init(frames: 60, camera: .still, transitionIn: .cut),
        ])
        video.forcedKeyframes = [key]
        return video
    }

    @Test("a fade and a cut around an encoder's extra keyframe are found as they are", arguments: [112, 114, 115, 116, 118])
    func earlyKeyOnFade(key: Int) throws {
        let video = Self.earlyKeyOnFade(at: key)
        let path = try Fixtures.path("scene-early-key-on-fade-\(key).mp4", video)
        let found = try Self.changes(in: path)
        let frame = 1 / Double(video.frameRate)
        #expect(found.count == 2, "found \(Self.describe(found))")
        for (time, kind) in zip(video.boundaryTimes, [TransitionKind.fade, .cut]) {
            #expect(
                found.contains { abs($0.time - time) <= 2 * frame + 1e-6 && $0.kind == kind },
                "expected a \(kind) at \(time): \(Self.describe(found))")
        }
    }

    /// A cut at frame 35 sends its GOP (30–59) to be decoded frame by frame; in the next shot a
    /// snap zoom or whip pan (5 frames at one speed) begins on the next keyframe, frame 60, so
    /// the run's last step, onto that keyframe, is the burst's first and as large as a cut's. With
    /// no frame after it in the run it stood out from the still frames before it: a false cut.
    /// The keyframe's sample run moves, so the next GOP is decoded too and the burst seen whole.
    static func burstOnKeyframe(_ kind: SyntheticVideo.Effect.Kind) -> SyntheticVideo {
        var video = phoneH264([.init(frames: 35, camera: .still), .init(frames: 85, camera: .still)])
        video.effects = [.init(kind, startFrame: 60, frames: 5, eased: false)]
        return video
    }

    @Test(
        "a zoom or whip pan begun on the keyframe after a GOP decoded for a cut is no cut: the next GOP is decoded to see the burst whole",
        arguments: ["zoom", "whip"])
    func burstOnKeyframe(kind: String) throws {
        let video = Self.burstOnKeyframe(kind == "zoom" ? .zoom(factor: 2.5) : .whip(pixels: 320))
        let path = try Fixtures.path("scene-\(kind)-on-keyframe.mp4", video)
        let expected = try #require(video.boundaryTimes.first)
        let found = try Self.changes(in: path)
        #expect(
            Self.isOnly(.cut, at: expected, in: found, frameRate: video.frameRate), "found \(Self.describe(found)), expected a cut at \(expected)")
    }

    /// A time-lapse (each picture held ten frames, a camera's noise and all, so every new one is
    /// coded nearly whole and none stands out by its size) in 120-frame GOPs, with an encoder's
    /// extra keyframe on a cut at frame 420 and another cut at 390 inside the GOP before it. The
    /// keyframes either side of that GOP (360 and 420) are in different shots and each is repeated
    /// by the picture after it, so their sample runs do not move: taken for calm, the keyframe
    /// cut was trusted without decoding the GOP, and the cut at 390 was lost.
    static let timeLapseEarlyKey: SyntheticVideo = {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [.init(frames: 390), .init(frames: 30), .init(frames: 120)])
        video.audio = nil
        video.heldFrames = 10
        video.noise = 30
        video.gopSize = 120
        video.forcedKeyframes = [420]
        video.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=120:min-keyint=120:scenecut=0"]
        return video
    }()

    @Test(
        "a time-lapse's keyframes, each repeated by the picture after it, are not taken for calm: the GOP before an encoder's keyframe cut is decoded, and the cut inside it found"
    )
    func timeLapseEarlyKey() throws {
        let video = Self.timeLapseEarlyKey
        let path = try Fixtures.path("scene-time-lapse-early-key.mp4", video)
        func hasCuts(_ found: [SceneChange]) -> Bool {
            Self.isExactly(video.boundaryTimes.map { _ in .cut }, at: video.boundaryTimes, in: found, frameRate: video.frameRate)
        }
        let found = try Self.changes(in: path)
        #expect(hasCuts(found), "found \(Self.describe(found)), expected cuts at \(video.boundaryTimes)")
        let trusting = try Self.changes(in: path) { $0.repeatedPictureActivity = 0 }
        #expect(!hasCuts(trusting), "repeated pictures taken for calm: \(Self.describe(trusting)) (the fixture exercises the rule)")
    }

    /// x264's open GOPs: each keyframe after the first is an I picture with a recovery point, not an
    /// IDR picture, and FFmpeg's decoder holds back the pictures after it until it has output it.
    @Test("H.264 open GOPs: each keyframe's motion is measured as with closed GOPs, and every cut is found")
    func h264OpenGOPs() throws {
        var video = Self.openGOPs(hevc: false)
        video.encoderOptions = ["preset": "veryfast", "x264-params": "scenecut=0:open-gop=1:bframes=3"]
        let path = try Fixtures.path("scene-open-gops-h264.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        let frame = 1 / Double(video.frameRate)
        #expect(analysis.changes.count == video.boundaryTimes.count, "found \(Self.describe(analysis.changes))")
        for time in video.boundaryTimes {
            #expect(
                analysis.changes.contains { abs($0.time - time) <= 2 * frame + 1e-6 && $0.kind == .cut },
                "expected a cut at \(time): \(Self.describe(analysis.changes))")
        }
        try Self.expectMotionAsInClosedGOPs(analysis)
    }

    @Test("decodes sparsely: whole GOPs only around scene changes")
    func decodesSparsely() throws {
        let video = Fixtures.scenes()
        let path = try Fixtures.path("h264-gop30.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        #expect(analysis.totalFrames == video.frameCount)
        // 20 GOPs of 30 frames. Each sample run sends the keyframe and `sampleRunPackets` packets after
        // it, so it yields at most that many frames plus one (one frame of slack on top).
        // A change on a GOP boundary needs the GOP before it in full, a gradual one the two it spans:
        // 4 cuts + 2 × 2 gradual = 8 GOPs, and one more the shaky shot may cost.
        let gops = video.frameCount / video.gopSize
        let bound = gops * (VideoScanner.Settings().sampleRunPackets + 2) + 9 * video.gopSize
        #expect(analysis.decodedFrames <= bound, "decoded \(analysis.decodedFrames) of \(analysis.totalFrames), bound \(bound)")
    }
}

extension SceneDetectionTests {
    /// One 240-frame GOP (as x264 codes a still stretch when left to its own keyframes) holding two
    /// changes: at frame 40 a cut or a fade through black into a still shot, and at frame 170 a
    /// jump cut in it (the camera 10 pixels over, so the picture still looks like the next
    /// keyframe's at the scanner's scale, with the sensor's grain new from that frame: the encoder
    /// codes the picture nearly whole, a spike against the second around it but smaller than the
    /// first change's). The run placed the first change, saw the picture look like the next
    /// keyframe, and stopped: the jump cut was never decoded. `jump: false` keeps the camera
    /// where it was: the new grain alone, a spike that holds no change.
    static func laterSpikeInLongGOP(fade: Bool, jump: Bool = true) -> SyntheticVideo {
        var shot = SyntheticVideo.Scene(frames: 130, camera: .still)
        if fade { shot.transitionIn = .fadeThroughBlack(frames: 30) }
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: 40, camera: .still), shot, .init(frames: 110, camera: .still, look: 1, shift: jump ? 10 : 0),
            ])
        video.audio = nil
        video.gopSize = 240
        // Grain that makes the new grain's picture spike against the second around it while it
        // stays smaller than the first change's largest (a fade's pictures are smaller than a
        // cut's: with 8 after a fade the jump's picture is the GOP's largest, a spike already).
        video.noise = fade ? 4 : 8
        video.noiseHeldFrames = 170
        video.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=240:min-keyint=240:scenecut=0"]
        return video
    }

    @Test(
        "a long GOP's later spike is judged after the first change is placed: a jump cut there is found, reached over the anchors; new grain alone is no change",
        arguments: [false, true])
    func laterSpikeInLongGOP(fade: Bool) throws {
        let video = Self.laterSpikeInLongGOP(fade: fade)
        let path = try Fixtures.path("scene-later-spike-\(fade ? "fade" : "cut").mp4", video)
        let kinds: [TransitionKind] = [fade ? .fade : .cut, .cut]
        func hasAll(_ found: [SceneChange]) -> Bool { Self.isExactly(kinds, at: video.boundaryTimes, in: found, frameRate: video.frameRate) }
        let found = try Self.changes(in: path)
        #expect(hasAll(found), "found \(Self.describe(found)), expected \(kinds) at \(video.boundaryTimes)")
        let gopOnly = try Self.changes(in: path) { $0.localSpikeWindow = 0 }
        #expect(!hasAll(gopOnly), "spikes against the GOP only: \(Self.describe(gopOnly)) (the fixture exercises the rule)")

        let grain = Self.laterSpikeInLongGOP(fade: fade, jump: false)
        let still = try Self.changes(in: try Fixtures.path("scene-later-grain-\(fade ? "fade" : "cut").mp4", grain))
        #expect(Self.isOnly(kinds[0], at: grain.boundaryTimes[0], in: still, frameRate: grain.frameRate), "new grain: found \(Self.describe(still))")
    }
}

extension SceneDetectionTests {
    /// A fast pan (8 pixels a frame) over the first two GOPs, a cut on the keyframe at frame 60
    /// into a dim still shot (a tenth of the light), and a cut on the next keyframe, frame 90,
    /// into another dim still shot. The GOP before each cut is decoded to its end, so the run
    /// begun in the pan goes on through the dim shot, whose steps are all repeats of grain: the
    /// dim cut, small as dim pictures' steps are, was measured against the pan's motion (the
    /// baseline the run began with) and lost.
    static let cutAfterRunFromPan: SyntheticVideo = {
        var dim = SyntheticVideo.Scene(frames: 30, camera: .still), other = SyntheticVideo.Scene(frames: 60, camera: .still)
        dim.light = 0.1
        other.light = 0.1
        return phoneH264([.init(frames: 60, camera: .pan(pixelsPerFrame: 8)), dim, other])
    }()

    @Test(
        "a run going on into a GOP takes that GOP's motion as its baseline: a cut out of a still shot is not measured against the pan the run began in"
    )
    func cutAfterRunFromPan() throws {
        let video = Self.cutAfterRunFromPan
        let path = try Fixtures.path("scene-cut-after-run-from-pan.mp4", video)
        let found = try Self.changes(in: path)
        #expect(
            Self.isExactly([.cut, .cut], at: video.boundaryTimes, in: found, frameRate: video.frameRate),
            "found \(Self.describe(found)), expected cuts at \(video.boundaryTimes)")
    }
}

extension SceneDetectionTests {
    /// A cut on the keyframe at frame 60 from a still shot into one that pans 3 pixels a frame.
    /// The GOP before it is decoded to its end; the step onto the keyframe stands out as a cut's
    /// and the keyframe's picture moves, as at the start of a whip pan, but at a small share of
    /// that step: the shot's own pace, not a burst's.
    static let cutIntoPanOnKeyframe = phoneH264([
        .init(frames: 60, camera: .still), .init(frames: 90, camera: .pan(pixelsPerFrame: 3)),
    ])

    @Test("a cut on a keyframe into a moving shot does not send the run on into the next GOP: the shot moves at its own pace, not a burst's")
    func cutIntoPanOnKeyframe() throws {
        let video = Self.cutIntoPanOnKeyframe
        let path = try Fixtures.path("scene-cut-into-pan-on-keyframe.mp4", video)
        let analysis = try Self.analysis(of: path)
        let expected = try #require(video.boundaryTimes.first)
        #expect(Self.isOnly(.cut, at: expected, in: analysis.changes, frameRate: video.frameRate), "found \(Self.describe(analysis.changes))")
        // Each GOP's sample run (its keyframe and the picture after it, one frame of slack), the
        // GOP before the cut and the last GOP (no keyframe after it) decoded whole: not the GOP
        // after the cut.
        let gops = video.frameCount / video.gopSize
        let bound = gops * (VideoScanner.Settings().sampleRunPackets + 2) + 2 * video.gopSize
        #expect(analysis.decodedFrames <= bound, "decoded \(analysis.decodedFrames), bound \(bound)")
        let anyPace = try Self.analysis(of: path) { $0.burstPace = 0 }
        #expect(anyPace.decodedFrames > bound, "with any pace taken for a burst: \(anyPace.decodedFrames) (the fixture exercises the rule)")
    }
}

extension SceneDetectionTests {
    /// A still shot over five one-second GOPs and a jump cut into the last (frame 165: the camera
    /// 64 pixels over, the same scene). The encoder finds the moved picture in the one before it,
    /// so no packet stands out, and no keyframe follows to show the picture changed.
    static let jumpInLastGOP = phoneH264([
        .init(frames: 165, camera: .still),
        .init(frames: 15, camera: .still, transitionIn: .cut, look: 0, shift: 64),
    ])

    @Test("a jump cut in the video's last GOP is found: with no keyframe after it to compare, that GOP is decoded frame by frame")
    func jumpInLastGOP() throws {
        let video = Self.jumpInLastGOP
        let path = try Fixtures.path("scene-jump-in-last-gop.mp4", video)
        let expected = try #require(video.boundaryTimes.first)
        let analysis = try Self.analysis(of: path)
        #expect(
            Self.isOnly(.cut, at: expected, in: analysis.changes, frameRate: video.frameRate),
            "found \(Self.describe(analysis.changes)), expected a cut at \(expected)")
        // Each GOP's sample run (its keyframe and the picture after it, one frame of slack) and the
        // last GOP whole: nothing else is decoded.
        let gops = video.frameCount / video.gopSize
        let bound = gops * (VideoScanner.Settings().sampleRunPackets + 2) + video.gopSize
        #expect(analysis.decodedFrames <= bound, "decoded \(analysis.decodedFrames), bound \(bound)")
        let packetsOnly = try Self.changes(in: path) { $0.lastGOPFrameByFrame = false }
        #expect(packetsOnly.isEmpty, "the last GOP judged by its packets: \(Self.describe(packetsOnly)) (the fixture exercises the rule)")
    }
}

extension SceneDetectionTests {
    /// Footage cut faster than the encoder's longest GOP, as x264 codes it on its own (keyframes
    /// on the cuts it finds, at most 250 pictures apart): every GOP ends on a cut, each longer than
    /// the last, so no keyframe comes early against the GOPs before it, and keyframes on cuts are
    /// what is typical. The fourth cut is a jump cut (frame 300: the camera 64 pixels over, the same
    /// scene), whose keyframes keep their colours. Keyframes are forced on the cuts so the test
    /// knows where they are; the encoder's option string says it puts them there.
    static var jumpOnKeyframeInFastCuts: SyntheticVideo {
        var video = phoneH264([
            .init(frames: 60, camera: .still),
            .init(frames: 70, camera: .still, transitionIn: .cut),
            .init(frames: 80, camera: .still, transitionIn: .cut),
            .init(frames: 90, camera: .still, transitionIn: .cut),
            .init(frames: 90, camera: .still, transitionIn: .cut, look: 3, shift: 64),
            .init(frames: 45, camera: .still, transitionIn: .cut),
        ])
        video.gopSize = 250
        video.forcedKeyframes = video.boundaryFrames
        video.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=\(video.gopSize):min-keyint=25:scenecut=40"]
        return video
    }

    @Test(
        "a jump cut on a keyframe is found where every GOP ends on a cut: the encoder's own longest GOP, read from its options, shows the keyframe came early"
    )
    func jumpOnKeyframeInFastCuts() throws {
        let video = Self.jumpOnKeyframeInFastCuts
        let path = try Fixtures.path("scene-jump-on-keyframe-in-fast-cuts.mp4", video)
        // The fixture is what it says: a keyframe on every cut and nowhere else, and the encoder's
        // option string in the stream.
        let (keys, options) = try Self.keyframes(in: path)
        let expectedKeys = [0] + video.boundaryTimes
        #expect(
            keys.count == expectedKeys.count && zip(keys, expectedKeys).allSatisfy { abs($0 - $1) < 0.5 / Double(video.frameRate) },
            "keyframes at \(keys)")
        #expect(options == EncoderOptions(maximumKeyInterval: video.gopSize, keyframesOnCuts: true), "options \(String(describing: options))")
        let jump = video.boundaryTimes[3]
        let found = try Self.changes(in: path)
        #expect(
            found.count == video.boundaryTimes.count
                && zip(found, video.boundaryTimes).allSatisfy { $0.kind == .cut && abs($0.time - $1) <= 2 / Double(video.frameRate) + 1e-6 },
            "found \(Self.describe(found)), expected cuts at \(video.boundaryTimes)")
        // Early only against the GOPs seen so far, that keyframe is taken for the encoder's rhythm.
        let unread = try Self.changes(in: path) { $0.readsEncoderKeyInterval = false }
        #expect(
            !unread.contains { abs($0.time - jump) <= 2 / Double(video.frameRate) + 1e-6 },
            "without the encoder's options: \(Self.describe(unread)) (the fixture exercises the rule)")
    }
}
