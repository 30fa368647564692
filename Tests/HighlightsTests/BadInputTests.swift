import Foundation
import Media
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

@testable import Highlights

/// Inputs that are not what they claim, in the engine: never taken for a video, never followed,
/// or rendered as far as they decode. (Every refusal's code, exit status and message through the
/// `moments` command: `CommandLineBadInputTests`.)
@Suite("Bad input", .heavy)
struct BadInputTests {
    /// About one in twenty random files passes FFmpeg's probe as a raw H.263 or DV stream (at its
    /// weakest score, with no length); none of them may be taken for a video.
    @Test("random bytes are never taken for a video (300 seeded files)")
    func randomFiles() throws {
        let folder = Fixtures.scratch()
        var weak = 0
        for seed in UInt64(1)...300 {
            let path = folder.appendingPathComponent("random-\(seed).mp4").path
            try Fixtures.randomBytes(seed: seed, count: 64_000).write(to: URL(fileURLWithPath: path))
            if let input = try? InputFile(path: path, demuxers: nil), input.probeScore <= InputFile.weakProbeScore { weak += 1 }
            do {
                _ = try MediaProbe.open(path, limits: MediaLimits())
                Issue.record("seed \(seed) was taken for a video")
            } catch {
                #expect(error.code == .notAVideo, "seed \(seed): \(error.code): \(error.message)")
            }
        }
        #expect(weak >= 3, "the seeds should include files FFmpeg guesses a format for; \(weak) did")
    }

    /// An upload that is a playlist naming a file on the worker's disk must not make the engine read
    /// that file (local file inclusion): only the container demuxers an upload may use are open.
    @Test("playlists that name other files (HLS, ffconcat) are refused, not followed")
    func playlists() throws {
        let folder = Fixtures.scratch()
        let segment = folder.appendingPathComponent("private.ts").path
        try FileManager.default.copyItem(
            atPath: try Fixtures.path("h264-aac.ts", Fixtures.clip(codec: "libx264", audio: .aac, container: "mpegts")),
            toPath: segment)
        let playlists = [
            ("hls", "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:3.0,\nfile://\(segment)\n#EXT-X-ENDLIST\n"),
            // The concat demuxer refuses absolute names by default; a name beside the upload it reads.
            ("concat", "ffconcat version 1.0\nfile 'private.ts'\n"),
        ]
        for (demuxer, text) in playlists {
            let path = folder.appendingPathComponent("\(demuxer)-upload.mp4").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            // The danger is real: with every demuxer open, FFmpeg follows the playlist to the file.
            let unguarded = try? InputFile(path: path, demuxers: nil)
            #expect(unguarded?.formatName == demuxer, "FFmpeg reads this playlist as \(unguarded?.formatName ?? "nothing")")
            do {
                _ = try MediaProbe.probe(path)
                Issue.record("the \(demuxer) playlist was taken for a video")
            } catch {
                #expect(error.code == .notAVideo, "\(demuxer): \(error.code): \(error.message)")
            }
        }
    }

    @Test("a file cut off half-way renders what is decodable (streamable containers)")
    func truncatedStream() throws {
        let whole = try Fixtures.path("long.mkv", Fixtures.clip(codec: "libx264", audio: .aac, container: "matroska", frames: 90))
        let data = try Data(contentsOf: URL(fileURLWithPath: whole))
        let folder = Fixtures.scratch()
        let input = folder.appendingPathComponent("half.mkv")
        try data.prefix(data.count / 2).write(to: input)
        let output = folder.appendingPathComponent("half.mp4").path
        _ = try HighlightEngine().highlight(input: input.path, output: output, settings: HighlightSettings())
        let duration = try Probe(output).duration
        // 6 s of footage; about half of it survives.
        #expect(duration > 1.5 && duration < 4.5, "duration \(duration)")
        #expect(try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"]).stderr.isEmpty)
    }
}
