import Foundation
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

/// Crafted inputs that used to make memory grow with the video: the engine must stay within a
/// budget that does not depend on the picture's shape or on how long a stretch lasts.
@Suite("Memory bounds", .heavy)
struct MemoryBoundsTests {
    /// Peak RSS allowed for `moments highlight` (debug build) on these small pictures. A normal
    /// 320 × 180 clip peaks near 100 MB. What the old engine kept grew with the video: on the thin
    /// clip a 64 × 17,280 thumbnail per keyframe (3.3 MB each, 1,200 keyframes: 4 GB), on the 1:64
    /// clip 64 × 2,304 (442 KB, 900 keyframes: 400 MB), on the dark clip a 64 × 4,096 thumbnail
    /// per frame for as long as the dark stretch lasts (786 KB, 600 frames: 470 MB).
    static let budgetMB = 250.0

    enum Crafted: String, CaseIterable, CustomTestStringConvertible {
        /// 16 × 4320, every frame a keyframe, 120 fps, 10 s.
        case thinAllIntra
        /// 320 × 180 stored pixels 1:64 wide (shown 5 × 180), every frame a keyframe, 30 s.
        case tinySampleAspect
        /// 20 s of a dim, tall picture (16 × 1024) in one GOP: decoded frame by frame while the
        /// scene detector follows the dark stretch.
        case darkSingleGOP

        var testDescription: String { rawValue }

        var video: SyntheticVideo {
            switch self {
            case .thinAllIntra:
                var video = SyntheticVideo(width: 16, height: 4320, frameRate: 120, scenes: [.init(frames: 1200, camera: .pan(pixelsPerFrame: 1))])
                video.gopSize = 1
                video.audio = nil
                return video
            case .tinySampleAspect:
                var video = Fixtures.clip(codec: "libx264", audio: .aac, container: nil, frames: 450)
                video.sampleAspectRatio = (1, 64)
                video.gopSize = 1
                return video
            case .darkSingleGOP:
                var video = SyntheticVideo(width: 16, height: 1024, frameRate: 30, scenes: [.init(frames: 600, camera: .shaky(amplitude: 2))])
                video.brightness = 0.08
                video.gopSize = 600
                video.encoderOptions = SyntheticVideo.phoneX264Options
                return video
            }
        }
    }

    @Test("a crafted picture shape or a long dark GOP keeps the whole run within the budget", arguments: Crafted.allCases)
    func bounded(_ crafted: Crafted) throws {
        let input = try Fixtures.path("crafted-\(crafted.rawValue).mp4", crafted.video)
        let output = Fixtures.scratch().appendingPathComponent("\(crafted.rawValue).mp4").path
        let (status, peak) = try runMeasuringMemory(momentsBinary, ["highlight", input, "-o", output, "--duration", "5"])
        #expect(status == 0, "moments highlight exited \(status)")
        #expect(peak < Self.budgetMB, "peak RSS \(peak) MB")
        #expect(FileManager.default.fileExists(atPath: output))
    }
}
