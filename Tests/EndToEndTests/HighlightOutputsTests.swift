import Foundation
import JobStore
import ServiceTestSupport
import Testing

/// API 1.1's highlight choices and outputs through real `moments api` and `moments worker`
/// processes against PostgreSQL, Redis and SeaweedFS.
@Suite("Highlight choices and outputs (real processes and servers)", .serialized, .heavy)
struct HighlightOutputsTests {
    typealias System = LiveSystem

    /// Uploads `file` with `fields` and waits for the job to end; answers its id and details.
    static func highlight(
        _ base: String, _ auth: [String], file: String = TestFootage.twentySeconds,
        fields: [String: String]
    ) async throws -> (id: String, details: [String: Any]) {
        let form = fields.sorted { $0.key < $1.key }.flatMap { ["-F", "\($0.key)=\($0.value)"] }
        let upload = try curl(auth + ["-F", "file=@\(file);filename=IMG_0007.MOV;type=video/mp4"] + form + ["\(base)/api/v1/upload"])
        try #require(upload.status == 200, "\(upload.body)")
        let id = try #require(try CurlAPI.json(upload.body)["job_id"] as? String)
        var details: [String: Any] = [:]
        let ended = try await TestServices.eventually(timeout: .seconds(120)) {
            details = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/jobs/\(id)"]).body)
            return ["completed", "failed", "cancelled"].contains(details["status"] as? String ?? "")
        }
        try #require(ended && details["status"] as? String == "completed", "\(details)")
        return (id, details)
    }

    @Test("min_segment, max_segment, max_segments and fps: kept by the highlight, shown in the details, refused when impossible")
    func segmentChoices() async throws {
        // Twelve uploads from one device in a minute: more than the default limit of ten.
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true", "RATE_LIMIT_UPLOADS_PER_OWNER": "20"]) { base in
            let auth = try CurlAPI.device(base)
            let (_, details) = try await Self.highlight(
                base, auth,
                fields: [
                    "target_duration": "10", "min_segment": "3",
                    "max_segment": "4", "quality": "low",
                ])
            #expect(details["min_segment"] as? Double == 3 && details["max_segment"] as? Double == 4, "\(details)")
            #expect(details["max_segments"] == nil && details["aspect"] == nil && details["fps"] == nil, "choices not made are left out")
            let segments = try #require(details["segments"] as? [[String: Double]])
            let lengths = segments.map { ($0["end"] ?? 0) - ($0["start"] ?? 0) }
            #expect(lengths.allSatisfy { $0 >= 3 - 1.0 / 30 && $0 <= 4 + 1.0 / 30 }, "\(lengths)")
            #expect(abs(lengths.reduce(0, +) - 10) <= 0.6, "\(lengths)")

            let (_, few) = try await Self.highlight(
                base, auth,
                fields: [
                    "target_duration": "10", "max_segments": "2", "quality": "low",
                    "fps": "source",
                ])
            #expect(few["max_segments"] as? Int == 2)
            #expect(few["fps"] as? String == "source", "\(few)")
            #expect((few["segments"] as? [Any])?.count ?? 0 <= 2, "\(few)")

            for (fields, code) in [
                (["min_segment": "0.2"], "invalid_min_segment"), (["max_segment": "abc"], "invalid_max_segment"),
                (["max_segments": "100"], "invalid_max_segments"), (["aspect": "3:4"], "invalid_aspect"),
                (["fps": "24"], "invalid_fps"), (["quality": "original", "fps": "30"], "invalid_fps"),
                (["quality": "4k"], "invalid_quality"),
                (["min_segment": "5", "max_segment": "4"], "invalid_segments"),
                (["max_segment": "2", "max_segments": "3", "target_duration": "30"], "invalid_segments"),
            ] {
                let form = fields.flatMap { ["-F", "\($0.key)=\($0.value)"] }
                let refused = try CurlAPI.error(
                    try curl(
                        auth + ["-F", "file=@\(TestFootage.sixSeconds);type=video/mp4"] + form
                            + ["\(base)/api/v1/upload"]))
                #expect(refused.status == 422 && refused.code == code && !refused.message.isEmpty, "\(fields): \(refused)")
            }
            let direct = try CurlAPI.error(
                try curl(
                    auth + [
                        "-X", "POST", "-H", "Content-Type: application/json", "-d",
                        #"{"target_duration": 10, "max_segment": 2, "max_segments": 2}"#,
                        "\(base)/api/v1/uploads",
                    ]))
            #expect(direct.status == 422 && direct.code == "invalid_segments", "\(direct)")
            let rate = try CurlAPI.error(
                try curl(
                    auth + [
                        "-X", "POST", "-H", "Content-Type: application/json", "-d",
                        #"{"target_duration": 10, "fps": "60"}"#, "\(base)/api/v1/uploads",
                    ]))
            #expect(rate.status == 422 && rate.code == "invalid_fps", "\(rate)")
        }
    }

    @Test("Poster and thumbnail strip: the best picture, not a black or blurred one, on a clip that opens in the dark")
    func posterAndThumbnails() async throws {
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true"]) { base in
            let auth = try CurlAPI.device(base)
            let (id, details) = try await Self.highlight(base, auth, file: TestFootage.blackOpening, fields: ["target_duration": "6"])
            let posterURL = try #require(details["poster_url"] as? String, "\(details)")
            #expect(posterURL.hasSuffix("/api/v1/jobs/\(id)/poster"))
            #expect((details["thumbnails_url"] as? String)?.hasSuffix("/api/v1/jobs/\(id)/thumbnails") == true)
            let status = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/jobs/\(id)/status"]).body)
            #expect(status["poster_url"] as? String == posterURL)

            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-stills-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let poster = folder.appendingPathComponent("poster.jpg").path
            let strip = folder.appendingPathComponent("strip.jpg").path
            #expect(try curl(auth + ["-o", "/dev/null", posterURL]).status == 302, "a redirect to signed storage, as the download")
            #expect(try curl(auth + ["-L", "-o", poster, posterURL]).status == 200)
            #expect(try curl(auth + ["-L", "-o", strip, "\(base)/api/v1/jobs/\(id)/thumbnails"]).status == 200)
            let head = try Data(contentsOf: URL(fileURLWithPath: poster)).prefix(3)
            #expect(Array(head) == [0xFF, 0xD8, 0xFF], "a JPEG")

            // What each part of the fixture looks like, read the same way as the poster.
            let (w, h) = (320, 180)
            let black = TestFootage.look(try TestFootage.grey(TestFootage.blackOpening, at: 1.5, width: w, height: h), width: w)
            let soft = TestFootage.look(try TestFootage.grey(TestFootage.blackOpening, at: 4.5, width: w, height: h), width: w)
            let sharp = TestFootage.look(try TestFootage.grey(TestFootage.blackOpening, at: 8.5, width: w, height: h), width: w)
            let shown = TestFootage.look(try TestFootage.grey(poster, width: w, height: h), width: w)
            #expect(black.mean < 20 && sharp.mean > 80 && soft.sharpness * 2 < sharp.sharpness, "the fixture: \(black) \(soft) \(sharp)")
            #expect(shown.mean > black.mean + 50, "not black: \(shown) against \(black)")
            #expect(
                shown.sharpness > 0.7 * sharp.sharpness && shown.sharpness > 1.5 * soft.sharpness,
                "not blurred: \(shown) against sharp \(sharp) and out of focus \(soft)")

            // One picture per segment, each as tall as the strip, side by side.
            let segments = try #require(details["segments"] as? [Any])
            let size = try TestFootage.pictureSize(strip)
            #expect(size.height == 180 && size.width == 320 * segments.count, "\(size) for \(segments.count) segments")

            let notReady = try CurlAPI.error(try curl(auth + ["\(base)/api/v1/jobs/\(UUID().uuidString.lowercased())/poster"]))
            #expect(notReady.status == 404 && notReady.code == "job_not_found", "\(notReady)")
        }
    }

    @Test("Timeline export: EDL, FCPXML and OTIO of the highlight, read back by OpenTimelineIO's adapters and xmllint")
    func timelines() async throws {
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true"]) { base in
            let auth = try CurlAPI.device(base)
            let (id, details) = try await Self.highlight(base, auth, fields: ["target_duration": "8", "quality": "low"])
            let segments = try #require(details["segments"] as? [[String: Double]])
            try #require(segments.count >= 2, "a cut of several segments: \(segments)")
            // The fixture is 30 fps: each segment's frames as the server counts them.
            let expected = segments.map { segment -> (start: Double, length: Double) in
                let start = ((segment["start"] ?? 0) * 30).rounded(), end = ((segment["end"] ?? 0) * 30).rounded()
                return (start, end - start)
            }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-timelines-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            for (format, type) in [("edl", "text/plain"), ("fcpxml", "application/xml"), ("otio", "application/json")] {
                let file = folder.appendingPathComponent("cut.\(format)").path
                let reply = try curl(auth + ["-D", "-", "-o", file, "\(base)/api/v1/jobs/\(id)/timeline?format=\(format)"])
                #expect(reply.status == 200, "\(format): \(reply.body)")
                #expect(reply.body.lowercased().contains("content-type: \(type)"), "\(format): \(reply.body)")
                #expect(reply.body.contains("IMG_0007-highlight.\(format)"), "a file name to save it under")
                if format == "fcpxml" { #expect(try TimelineReader.wellFormed(file) == nil) }
                let timeline = try TimelineReader.read(format, file, rate: 30)
                let video = try #require(timeline.tracks.first { $0.kind == "Video" }?.clips, "\(format): a video track")
                #expect(video.count == expected.count, "\(format): \(video.count) clips for \(expected.count) segments")
                // The FCP X adapter truncates times to whole frames (float), so a frame of slack.
                for (clip, want) in zip(video, expected) {
                    #expect(
                        clip.rate == 30 && abs(clip.start - want.start) <= 1 && abs(clip.duration - want.length) <= 1,
                        "\(format): clip \(clip) for segment frames \(want)")
                }
                let total = expected.reduce(0) { $0 + $1.length }
                #expect(abs(timeline.duration - total) <= Double(expected.count), "\(format): \(timeline.duration) frames, segments \(total)")
                if format != "fcpxml" {
                    #expect(timeline.tracks.contains { $0.kind == "Audio" && $0.clips.count == expected.count }, "\(format): sound too")
                    #expect(video.allSatisfy { $0.targetURL?.hasSuffix("IMG_0007.MOV") == true }, "\(format): the source by name")
                }
            }
            let wrong = try CurlAPI.error(try curl(auth + ["\(base)/api/v1/jobs/\(id)/timeline?format=aaf"]))
            #expect(wrong.status == 400 && wrong.code == "invalid_format", "\(wrong)")
            let missing = try CurlAPI.error(try curl(auth + ["\(base)/api/v1/jobs/\(id)/timeline"]))
            #expect(missing.status == 400 && missing.code == "invalid_format", "\(missing)")
        }
    }

    @Test("aspect=9:16 of a landscape clip: the crop follows a moving subject, its centre inside the middle third of every frame")
    func reframesToPortrait() async throws {
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true"]) { base in
            let auth = try CurlAPI.device(base)
            let (id, details) = try await Self.highlight(
                base, auth, file: TestFootage.movingSubject,
                fields: ["target_duration": "10", "aspect": "9:16", "quality": "low"])
            #expect(details["aspect"] as? String == "9:16")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-reframe-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let video = folder.appendingPathComponent("highlight.mp4").path
            #expect(try curl(auth + ["-L", "-o", video, "\(base)/api/v1/jobs/\(id)/download"]).status == 200)
            // 360 high, 9:16: 202 wide (even).
            let size = try TestFootage.pictureSize(video)
            #expect(size.width == 202 && size.height == 360, "\(size)")
            let (centres, width) = try TestFootage.brightCentres(video)
            #expect(centres.count >= 290, "about 10 s at 30 fps: \(centres.count) frames")
            let third = Double(width) / 3
            let outside = centres.enumerated().filter { $0.element.map { $0 < third || $0 > 2 * third } ?? true }
            #expect(outside.isEmpty, "frames whose subject is missing or outside the middle third (\(third)…\(2 * third)): \(outside.prefix(10))")
            // Smooth: the subject moves steadily in the source, so it barely moves in the crop from frame to frame.
            let steps = zip(centres, centres.dropFirst()).compactMap { a, b in a.flatMap { a in b.map { abs($0 - a) } } }
            #expect(
                (steps.max() ?? 0) < 6 || steps.filter { $0 >= 6 }.count <= 1, "jumps between frames (a cut allowed): \(steps.filter { $0 >= 6 })")
            let poster = folder.appendingPathComponent("poster.jpg").path
            #expect(try curl(auth + ["-L", "-o", poster, "\(base)/api/v1/jobs/\(id)/poster"]).status == 200)
            let posterSize = try TestFootage.pictureSize(poster)
            #expect(posterSize.width == 202 && posterSize.height == 360, "the poster has the highlight's shape: \(posterSize)")
        }
    }
}
