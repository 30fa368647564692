import Foundation
import MediaSynth
import Testing
@testable import Highlights

@Suite("Scene detection")
struct SceneDetectionTests {
    /// The same shots encoded several ways: each scene change must be found within ±2 frames,
    /// of the right kind, and nothing else (the shaky and panning shots stay whole).
    static let encodings: [(name: String, video: SyntheticVideo)] = [
        ("h264-gop30.mp4", Fixtures.scenes()),
        ("h264-gop250.mp4", Fixtures.scenes(gop: 250)),
        ("h264-vfr.mkv", Fixtures.scenes(variableFrameRate: true)),
        ("hevc.mp4", Fixtures.scenes(codec: "libx265", gop: 30, options: ["preset": "ultrafast", "x265-params": "log-level=none"])),
        ("vp9.webm", {
            var v = Fixtures.scenes(codec: "libvpx-vp9", gop: 30, options: ["deadline": "realtime", "cpu-used": "8"])
            v.audio = .opus
            return v
        }()),
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
    @Test("the lean pass for pictures beyond 4K finds the same changes", arguments: ["h264-gop30.mp4", "hevc.mp4"])
    func leanPassAgrees(name: String) throws {
        let video = try #require(Self.encodings.first { $0.name == name }?.video)
        let path = try Fixtures.path(name, video)
        var lean = HighlightSettings()
        lean.limits.leanDecodingBytes = 0
        let normal = try HighlightEngine().analyze(input: path)
        let leanAnalysis = try HighlightEngine().analyze(input: path, settings: lean)
        let frame = 1.0 / Double(video.frameRate)
        #expect(normal.changes.count == video.boundaryTimes.count)
        #expect(leanAnalysis.changes.count == normal.changes.count,
                "lean found \(leanAnalysis.changes.map { String(format: "%.3f %@", $0.time, $0.kind.rawValue) })")
        for (a, b) in zip(normal.changes, leanAnalysis.changes) {
            #expect(abs(a.time - b.time) <= frame + 1e-6 && a.kind == b.kind, "normal \(a.time) \(a.kind), lean \(b.time) \(b.kind)")
        }
        #expect(leanAnalysis.totalFrames == normal.totalFrames)
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
