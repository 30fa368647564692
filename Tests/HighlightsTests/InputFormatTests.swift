import Foundation
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("Input formats", .heavy)
struct InputFormatTests {
    /// Containers and codecs phones and cameras produce, each made by our encoder with a cut at 1.5 s.
    static let clips: [(name: String, video: SyntheticVideo, codec: String, audio: String?)] = [
        ("h264-aac.mov", Fixtures.clip(codec: "libx264", audio: .aac, container: "mov"), "h264", "aac"),
        ("h264-aac.m4v", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4"), "h264", "aac"),
        ("h264-aac.3gp", Fixtures.clip(codec: "libx264", audio: .aac, container: "3gp"), "h264", "aac"),
        ("h264-aac.ts", Fixtures.clip(codec: "libx264", audio: .aac, container: "mpegts"), "h264", "aac"),
        (
            "hevc-aac.mp4",
            Fixtures.clip(codec: "libx265", audio: .aac, container: nil, options: ["preset": "ultrafast", "x265-params": "log-level=none"]), "hevc",
            "aac"
        ),
        (
            "vp9-opus.webm", Fixtures.clip(codec: "libvpx-vp9", audio: .opus, container: nil, options: ["deadline": "realtime", "cpu-used": "8"]),
            "vp9", "opus"
        ),
        (
            "vp8-opus.mkv", Fixtures.clip(codec: "libvpx", audio: .opus, container: nil, options: ["deadline": "realtime", "cpu-used": "8"]), "vp8",
            "opus"
        ),
        ("mpeg4-mp3.avi", Fixtures.clip(codec: "mpeg4", audio: .mp3, container: nil), "mpeg4", "mp3"),
        ("mjpeg-pcm.avi", Fixtures.clip(codec: "mjpeg", pixelFormat: "yuvj420p", audio: .pcm, container: nil), "mjpeg", "pcm_s16le"),
        ("h264-none.mkv", Fixtures.clip(codec: "libx264", audio: nil, container: nil), "h264", nil),
    ]

    @Test("reads the stream facts and finds the cut", arguments: clips.map(\.name))
    func analyse(name: String) throws {
        let clip = try #require(Self.clips.first { $0.name == name })
        let path = try Fixtures.path(name, clip.video)
        let analysis = try HighlightEngine().analyze(input: path)
        #expect(analysis.info.videoCodec == clip.codec)
        #expect(analysis.info.audioCodec == clip.audio)
        #expect(analysis.info.hasAudio == (clip.audio != nil))
        #expect(analysis.info.width == 320 && analysis.info.height == 180)
        #expect(abs(analysis.info.duration - clip.video.duration) <= 2.0 / 30 + 1e-6, "duration \(analysis.info.duration)")
        #expect(analysis.totalFrames == clip.video.frameCount)
        let cut = try #require(clip.video.boundaryTimes.first)
        #expect(
            analysis.changes.count == 1 && abs((analysis.changes.first?.time ?? -1) - cut) <= 2.0 / 30 + 1e-6,
            "changes \(analysis.changes.map(\.time))")
    }

    @Test("a stream that starts mid-GOP (first frame not a keyframe) and at a non-zero time")
    func startsMidGOP() throws {
        let path = try Fixtures.path("whole.ts", Fixtures.clip(codec: "libx264", audio: .aac, container: "mpegts", frames: 90))
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        // Drop the first ~30 % at a 188-byte packet boundary.
        let cut = data.count * 3 / 10 / 188 * 188
        let chopped = Fixtures.scratch().appendingPathComponent("chopped.ts")
        try data[cut...].write(to: chopped)
        let output = Fixtures.scratch().appendingPathComponent("chopped.mp4").path
        let report = try HighlightEngine().highlight(input: chopped.path, output: output)
        #expect(report.output.duration > 2 && report.output.duration < 6)
        let decode = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.stderr.isEmpty, "\(decode.stderr)")
    }
}
