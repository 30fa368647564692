import Foundation
import Highlights
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

/// Every way an input can be unusable ends in `error: <code>: <sentence>`, a non-zero exit status,
/// and no output file, through the real `moments` command; success prints where the highlight is.
@Suite("Bad input to moments highlight", .heavy)
struct CommandLineBadInputTests {
    enum Case: String, CaseIterable, CustomTestStringConvertible {
        case empty, randomBytes, textFile, audioOnly, unknownCodec, truncatedIndex, tooShort, tooLong, tooLarge, missingFile, folder,
            missingOutputFolder
        var testDescription: String { rawValue }
    }

    /// Makes the input for `c` and returns (input path, output path, extra arguments, expected code).
    func prepare(_ c: Case, in folder: URL) throws -> (String, String, [String], String) {
        let input = folder.appendingPathComponent("input.mp4")
        let output = folder.appendingPathComponent("out.mp4").path
        switch c {
        case .empty:
            try Data().write(to: input)
            return (input.path, output, [], "not_a_video")
        case .randomBytes:
            try Fixtures.randomBytes(seed: 1).write(to: input)
            return (input.path, output, [], "not_a_video")
        case .textFile:
            try Data(String(repeating: "This is not a video, just some notes.\n", count: 200).utf8).write(to: input)
            return (input.path, output, [], "not_a_video")
        case .audioOnly:
            var video = Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4")
            video.hasVideo = false
            try video.write(to: input.path)
            return (input.path, output, [], "no_video_stream")
        case .unknownCodec:
            // An AVI whose video codec tag (FourCC) names no codec FFmpeg knows.
            let avi = try Fixtures.path("mpeg4-mp3.avi", Fixtures.clip(codec: "mpeg4", audio: .mp3, container: nil))
            var data = try Data(contentsOf: URL(fileURLWithPath: avi))
            let tag = Data("FMP4".utf8)
            var replaced = 0
            while let range = data.range(of: tag) {
                data.replaceSubrange(range, with: Data("ZQZQ".utf8))
                replaced += 1
            }
            #expect(replaced >= 1, "the fixture's AVI should carry the FMP4 tag")
            let input = folder.appendingPathComponent("input.avi")
            try data.write(to: input)
            return (input.path, output, [], "unsupported_codec")
        case .truncatedIndex:
            // Our writer puts the index (moov) at the end, so half a file has none.
            let whole = try Fixtures.path("h264-aac.m4v", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4"))
            let data = try Data(contentsOf: URL(fileURLWithPath: whole))
            try data.prefix(data.count / 2).write(to: input)
            return (input.path, output, [], "corrupt_media")
        case .tooShort:
            try Fixtures.clip(codec: "libx264", audio: .aac, container: nil, frames: 6).write(to: input.path)
            return (input.path, output, [], "too_short")
        case .tooLong:
            try Fixtures.clip(codec: "libx264", audio: .aac, container: nil).write(to: input.path)
            return (input.path, output, ["--max-duration", "2"], "too_long")
        case .tooLarge:
            var video = SyntheticVideo(width: 7696, height: 32, frameRate: 10, scenes: [.init(frames: 12)])
            video.audio = nil
            video.encoderOptions = ["preset": "ultrafast"]
            try video.write(to: input.path)
            return (input.path, output, [], "resolution_too_large")
        case .missingFile:
            return (folder.appendingPathComponent("nothing-here.mp4").path, output, [], "io_error")
        case .folder:
            return (folder.path, output, [], "io_error")
        case .missingOutputFolder:
            let source = try Fixtures.path("h264-aac.mov", Fixtures.clip(codec: "libx264", audio: .aac, container: "mov"))
            return (source, folder.appendingPathComponent("no/such/folder/out.mp4").path, [], "io_error")
        }
    }

    @Test("ends in its error code, a non-zero exit and no output", arguments: Case.allCases)
    func rejects(_ c: Case) throws {
        let folder = Fixtures.scratch()
        let (input, output, extra, code) = try prepare(c, in: folder)
        let result = try run(momentsBinary, ["highlight", input, "-o", output] + extra)
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("[") }
        #expect(lines.count == 1 && lines[0].hasPrefix("error: \(code): "), "stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("partial") }
        #expect(leftovers.isEmpty, "left behind \(leftovers)")
    }

    @Test("success prints where the highlight is and writes the report")
    func success() throws {
        let source = try Fixtures.path("h264-aac.mov", Fixtures.clip(codec: "libx264", audio: .aac, container: "mov"))
        let folder = Fixtures.scratch()
        let output = folder.appendingPathComponent("ok.mp4").path
        let reportPath = folder.appendingPathComponent("ok.json").path
        let result = try run(momentsBinary, ["highlight", source, "-o", output, "--report", reportPath])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(output))
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any]
        for key in ["input", "scenes", "segments", "timings", "real_time_factor", "output"] {
            #expect(report?[key] != nil, "report lacks \(key)")
        }
        // Not a terminal: one line per stage on standard error.
        #expect(result.stderr.contains("Finding scenes") && result.stderr.contains("Rendering"))
    }
}
