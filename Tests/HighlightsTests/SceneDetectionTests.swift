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
