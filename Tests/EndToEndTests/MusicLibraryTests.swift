import Foundation
import ServiceTestSupport
import Testing

/// The music library end to end: `moments music add|list|remove` against the real PostgreSQL and
/// SeaweedFS, `GET /api/v1/music`, and an upload with `music_id` through a real `moments api` and
/// `moments worker`, its highlight checked by ffmpeg.
@Suite("Music through the API: the library, an upload with music_id, cuts on the track's beat", .heavy)
struct MusicLibraryTests {
    /// A click track at 120 a minute (a click every 0.5 s from 0.25 s, the bar's first higher and
    /// louder) over a soft chord, 40 s, written by ffmpeg.
    static func clickTrack(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("clicks.wav").path
        let click = "lt(mod(t+0.25,0.5),0.03)*exp(-120*mod(t+0.25,0.5))"
        let bar = "lt(mod(t+0.25,2),0.03)"
        let expression = "0.5*\(click)*(if(\(bar),sin(2*PI*1500*t),0.6*sin(2*PI*1000*t)))+0.05*sin(2*PI*220*t)+0.04*sin(2*PI*330*t)"
        // (Commas inside a filter's option are escaped.)
        let escaped = expression.replacingOccurrences(of: ",", with: "\\,")
        let result = try captured("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "aevalsrc=\(escaped):s=44100:d=40", path])
        guard result.status == 0 else { throw TestFailure("ffmpeg: \(String(decoding: result.errors, as: UTF8.self))") }
        return path
    }

    /// A file's sound, mono 8 kHz, decoded by ffmpeg.
    static func sound(_ path: String) throws -> [Float] {
        let result = try captured("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-ac", "1", "-ar", "8000", "-f", "f32le", "-"])
        return result.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test(
        "a track added to the library is listed; an upload with its music_id gets a highlight of that track, cut on its beat; removed, it is refused")
    func libraryToHighlight() async throws {
        try await LiveSystem.withRunningSystem(workers: 1) { system in
            let base = system.base
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-music-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let track = try Self.clickTrack(in: folder)

            // A file that is no track is refused before anything is stored.
            let text = folder.appendingPathComponent("notes.mp3")
            try Data("la la la".utf8).write(to: text)
            let refused = try TestServices.moments(["music", "add", text.path, "--title", "Notes"], environment: system.environment)
            #expect(refused.status == 1 && refused.err.contains("error: not_audio: "), "\(refused.err)")

            let added = try TestServices.moments(
                ["music", "add", track, "--title", "Clicks", "--artist", "The Metronome", "--license", "CC0"],
                environment: system.environment)
            #expect(added.status == 0, "\(added.err)")
            let id = try #require(UUID(uuidString: added.out.trimmingCharacters(in: .whitespacesAndNewlines)), "\(added.out)")
            let listed = try curl(["\(base)/api/v1/music"])
            #expect(listed.status == 200, "\(listed.body)")
            let tracks = try #require(try CurlAPI.json(listed.body)["tracks"] as? [[String: Any]])
            let entry = try #require(tracks.first { ($0["id"] as? String) == id.uuidString.lowercased() }, "\(listed.body)")
            #expect(entry["title"] as? String == "Clicks" && entry["artist"] as? String == "The Metronome" && entry["license"] as? String == "CC0")
            #expect(abs((entry["duration"] as? Double ?? 0) - 40) < 0.1)
            let tempo = entry["tempo"] as? Double ?? 0
            #expect([60.0, 120, 240].contains { abs(tempo - $0) < 2 }, "tempo \(tempo)")

            // Bad music choices, each refused with its code.
            for (fields, code) in [
                (["music_id=\(UUID())"], "invalid_music_id"), (["music_id=not-a-uuid"], "invalid_music_id"),
                (["music_volume=-6"], "invalid_music_id"),
                (["music_id=\(id)", "music_volume=40"], "invalid_music_volume"),
                (["music_id=\(id)", "keep_source_audio=maybe"], "invalid_keep_source_audio"),
            ] {
                let reply = try curl(
                    ["-F", "file=@\(TestFootage.twentySeconds);type=video/mp4"] + fields.flatMap { ["-F", $0] } + ["\(base)/api/v1/upload"])
                let error = try CurlAPI.error(reply)
                #expect(error.status == 422 && error.code == code, "\(fields): \(reply.body)")
            }

            // The highlight: the music alone, so that what plays is the track.
            let upload = try curl([
                "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=10",
                "-F", "music_id=\(id)", "-F", "music_volume=-3", "-F", "keep_source_audio=false", "\(base)/api/v1/upload",
            ])
            let job = try #require(UUID(uuidString: try CurlAPI.json(upload.body)["job_id"] as? String ?? ""), "\(upload.status) \(upload.body)")
            let done = try await TestServices.eventually(timeout: .seconds(180)) {
                let status = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(job)"]).body)["status"] as? String
                return status == "completed" || status == "failed"
            }
            let details = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(job)"]).body)
            #expect(done && details["status"] as? String == "completed", "\(details)")
            #expect(
                details["music_id"] as? String == id.uuidString.lowercased() && details["music_volume"] as? Double == -3
                    && details["keep_source_audio"] as? Bool == false, "\(details)")
            let output = folder.appendingPathComponent("highlight.mp4")
            #expect(try curl(["-L", "-o", output.path, "\(base)/api/v1/jobs/\(job)/download"]).status == 200)
            #expect(abs(try TestFootage.duration(output.path) - 10) <= 0.5)

            // The track is what plays: its sound matches the track from one of its bars (the
            // music starts on a downbeat), by cross-correlation around each.
            let heard = try Self.sound(output.path), song = try Self.sound(track)
            let rate = 8_000.0, length = Int(4 * rate), from = Int(2 * rate)
            var best = (start: 0.0, score: -1.0)
            for downbeat in stride(from: 0.25, to: 30, by: 2.0) {
                for shift in -80...80 {
                    let at = Int((downbeat + 2) * rate) + shift
                    guard at >= 0, at + length <= song.count, from + length <= heard.count else { continue }
                    var dot = 0.0, a = 0.0, b = 0.0
                    for n in 0..<length {
                        let x = Double(heard[from + n]), y = Double(song[at + n])
                        dot += x * y; a += x * x; b += y * y
                    }
                    let score = dot / max(1e-12, (a * b).squareRoot())
                    if score > best.score { best = (Double(at - from) / rate, score) }
                }
            }
            // (Brought to -16 LUFS, the clicks' peaks meet the limiter: 0.86 measured; any other
            // part of the track scores near 0.)
            let fromBar = (best.start - 0.25).truncatingRemainder(dividingBy: 2)
            #expect(best.score >= 0.8 && min(abs(fromBar), abs(fromBar - 2)) <= 0.01, "best match \(best.score) with the track from \(best.start) s")
            // Every cut between segments on a click: cumulative segment lengths, in the track's time.
            let segments = try #require(details["segments"] as? [[String: Any]])
            var elapsed = 0.0
            for segment in segments.dropLast() {
                elapsed += (segment["end"] as? Double ?? 0) - (segment["start"] as? Double ?? 0)
                let beat = (best.start + elapsed - 0.25) / 0.5
                let off = abs(beat - beat.rounded()) * 0.5
                // (At double time, the tracker's beats include the halfway points.)
                #expect(off <= 1.0 / 30 || (abs(tempo - 240) < 2 && abs(off - 0.25) <= 1.0 / 30), "the cut at \(elapsed) s is \(off) s from a click")
            }

            // A track of the app's own, in a `music` part: a text file is refused (415), a track is used.
            let notes = try CurlAPI.error(
                try curl([
                    "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "music=@\(text.path)",
                    "\(base)/api/v1/upload",
                ]))
            #expect(notes.status == 415 && notes.code == "not_audio", "\(notes)")
            let both = try CurlAPI.error(
                try curl([
                    "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "music=@\(track)",
                    "-F", "music_id=\(id)", "\(base)/api/v1/upload",
                ]))
            #expect(both.status == 422 && both.code == "invalid_music_id", "\(both)")
            let own = try curl([
                "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=8", "-F", "music=@\(track)",
                "\(base)/api/v1/upload",
            ])
            let ownJob = try #require(UUID(uuidString: try CurlAPI.json(own.body)["job_id"] as? String ?? ""), "\(own.status) \(own.body)")
            let ownDone = try await TestServices.eventually(timeout: .seconds(180)) {
                let status = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(ownJob)"]).body)["status"] as? String
                return status == "completed" || status == "failed"
            }
            let ownDetails = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(ownJob)"]).body)
            #expect(
                ownDone && ownDetails["status"] as? String == "completed" && ownDetails["music_filename"] as? String == "clicks.wav"
                    && ownDetails["music_id"] == nil && ownDetails["keep_source_audio"] as? Bool == true, "\(ownDetails)")
            #expect(abs(try LiveSystem.downloadedDuration(base, id: ownJob).duration - 8) <= 0.5)

            let removed = try TestServices.moments(["music", "remove", id.uuidString], environment: system.environment)
            #expect(removed.status == 0 && removed.out.contains("removed Clicks"), "\(removed.err)")
            #expect(!(try curl(["\(base)/api/v1/music"]).body.contains(id.uuidString.lowercased())))
            let after = try CurlAPI.error(
                try curl([
                    "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "music_id=\(id)",
                    "\(base)/api/v1/upload",
                ]))
            #expect(after.status == 422 && after.code == "invalid_music_id", "\(after)")
            let again = try TestServices.moments(["music", "remove", id.uuidString], environment: system.environment)
            #expect(again.status == 1 && again.err.contains("error: not_found: "), "\(again.err)")
        }
    }
}
