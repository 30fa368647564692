import Foundation
import Highlights
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

/// `moments music analyze` and `moments highlight --music`: what the command prints, its exit
/// status, and a bad track or setting refused with its code.
@Suite("Music on the command line", .heavy)
struct MusicCommandTests {
    static func scratch(_ name: String) -> String { Fixtures.scratch().appendingPathComponent(name).path }

    @Test("moments music analyze prints the analysis, as JSON too, and refuses a text file by its code")
    func command() throws {
        var source = SplitMix64(seed: 21)
        let truth = Array(stride(from: 0, to: 15.5, by: 0.6))
        let file = Self.scratch("command.mp3")
        try Sounds.write(Sounds.normalised(Sounds.song(beats: truth, seconds: 16, swing: 0.5, using: &source), decibels: -14), to: file)
        let text = try run(momentsBinary, ["music", "analyze", file])
        #expect(text.status == 0 && text.stdout.contains(" a minute (strength ") && text.stdout.contains(": 16.0 s"), "\(text)")
        let json = try run(momentsBinary, ["music", "analyze", file, "--json"])
        try #require(json.status == 0, "\(json)")
        let analysis = try JSONDecoder().decode(MusicAnalysis.self, from: Data(json.stdout.utf8))
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(
            Set(object?.keys.map { $0 } ?? []) == ["duration", "tempo", "beat_strength", "beats", "downbeats", "onsets", "loudness", "loud_sections"])
        #expect(abs((analysis.tempo ?? 0) - 100) < 1 && analysis.beats.count >= 24, "\(analysis)")
        let notes = Self.scratch("notes.mp3")
        try Data("Buy milk, eggs and bread.\n".utf8).write(to: URL(fileURLWithPath: notes))
        let refused = try run(momentsBinary, ["music", "analyze", notes])
        #expect(refused.status == 1 && refused.stderr.hasPrefix("error: not_audio: ") && refused.stdout.isEmpty, "\(refused)")
    }

    @Test("the command line: --music with a text file, a 3 s track or a volume out of range ends in a clear error and no file")
    func badMusic() throws {
        let folder = Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let video = try Fixtures.path("music-command.mp4", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4", frames: 180))
        let text = folder.appendingPathComponent("notes.mp3")
        try Data("la la la, this is not a song".utf8).write(to: text)
        let short = folder.appendingPathComponent("short.wav").path
        try Sounds.write(Sounds.clicks(beats: [0, 0.5, 1, 1.5, 2, 2.5], seconds: 3), to: short)
        let output = folder.appendingPathComponent("out.mp4").path
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["--music", text.path], 1, "error: not_audio: "),
            (["--music", short], 1, "error: too_short: "),
            (["--music", folder.appendingPathComponent("missing.mp3").path], 1, "error: io_error: "),
            (["--music", short, "--music-volume", "40"], 64, "--music-volume must be between -30 and 12 dB"),
            (["--no-source-audio"], 64, "--no-source-audio needs --music"),
        ]
        for (arguments, status, says) in cases {
            let result = try run(momentsBinary, ["highlight", video, "-o", output, "--duration", "5"] + arguments)
            #expect(result.status == status && result.stderr.contains(says), "\(arguments): \(result.status) \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(arguments)")
        }
    }
}
