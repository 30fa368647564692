import Foundation
import HTTPTypes
import ServiceTestSupport
import Testing

/// Every malformed request ends in a status, a stable code and a sentence, and takes nothing: in
/// process, against real PostgreSQL and the in-memory queue.
@Suite("Bad requests (in process)", .quiet)
struct RequestErrorTests {
    @Test("Bad uploads and unknown jobs and routes end in a status, a stable code and a sentence; none leaves a job")
    func badRequests() async throws {
        try await InProcessAPI.run(["MAX_UPLOAD_BYTES": "\(2 << 20)"]) { api in
            let video = try InProcessAPI.footage
            let cases: [(String, InProcessAPI.Reply, Int, String)] = [
                ("JSON to the upload", try await api.post("/api/v1/upload", json: [:]), 400, "invalid_request"),
                ("no file", try await api.upload(nil, fields: ["target_duration": "30"]), 400, "missing_file"),
                ("target 3 s", try await api.upload(video, fields: ["target_duration": "3"]), 422, "invalid_target_duration"),
                ("target 'thirty'", try await api.upload(video, fields: ["target_duration": "thirty"]), 422, "invalid_target_duration"),
                ("quality ultra", try await api.upload(video, fields: ["quality": "ultra"]), 422, "invalid_quality"),
                ("codec av1", try await api.upload(video, fields: ["codec": "av1"]), 422, "invalid_codec"),
                (
                    "a callback without a secret", try await api.upload(video, fields: ["callback_url": "https://example.com/hook"]),
                    422, "webhooks_disabled"
                ),
                ("a shopping list", try await api.upload(Data("milk, eggs, bread\n".utf8)), 415, "not_a_video"),
                ("3 MiB over a 2 MiB limit", try await api.upload(Data(count: 3 << 20)), 413, "file_too_large"),
                ("an unknown job", try await api.get("/api/v1/jobs/\(UUID().uuidString)/status"), 404, "job_not_found"),
                ("not a job id", try await api.get("/api/v1/jobs/not-a-uuid/status"), 404, "job_not_found"),
                ("cancel an unknown job", try await api.send(.delete, "/api/v1/jobs/\(UUID().uuidString)"), 404, "job_not_found"),
                ("an unknown route", try await api.get("/api/v1/nowhere"), 404, "not_found"),
                (
                    "a known address, another method", try await api.send(.put, "/api/v1/jobs/\(UUID().uuidString)/status"), 405,
                    "method_not_allowed"
                ),
                ("POST to /ready", try await api.send(.post, "/ready"), 405, "method_not_allowed"),
            ]
            for (name, reply, status, code) in try await hostileForms(api, video: video) {
                let error = try reply.error()
                #expect(error.status == status && error.code == code, "\(name): \(error)")
            }
            var ids: Set<String> = []
            for (name, reply, status, code) in cases {
                let error = try reply.error()
                #expect(error.status == status && error.code == code, "\(name): \(error)")
                #expect(error.message.hasSuffix("."), "\(name): a sentence: \(error.message)")
                // Each error names its request's id, as its X-Request-Id header does.
                let id = try #require(reply.header("X-Request-Id"), "\(name): no X-Request-Id")
                #expect((try reply.json()["error"] as? [String: Any])?["request_id"] as? String == id, "\(name): \(reply.text)")
                ids.insert(id)
            }
            #expect(ids.count == cases.count, "a new id for every request")
            #expect(try await api.send(.put, "/ready").headers[.allow] == "GET", "405 names the methods the address answers")
            #expect(try await api.store.listJobs().isEmpty, "no refused request left a job")
            #expect(try await api.queue.stats().ready == 0)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: api.uploads.path)
            #expect(leftovers.isEmpty, "no refused upload left a file: \(leftovers)")
            let formats = try await api.get("/api/v1/upload/formats").json()
            #expect(formats["max_size_bytes"] as? Int == 2 << 20)
            #expect(formats["qualities"] as? [String] == ["high", "medium", "low", "original"])
        }
    }

    @Test("A callback_url that points into the server's own networks is refused at submission (422 invalid_callback_url)")
    func privateCallbacks() async throws {
        try await InProcessAPI.run(["WEBHOOK_SECRET": "0123456789abcdef0123"]) { api in
            let video = try InProcessAPI.footage
            for hook in [
                "http://127.0.0.1/hook", "http://localhost/hook", "http://10.0.0.5/hook", "http://169.254.169.254/latest/meta-data/",
                "http://100.64.1.1/hook", "http://[::1]/hook", "http://[fd00::5]/hook", "http://[::ffff:192.168.0.1]/hook",
                "https://1.1.1.1:6379/hook", "gopher://1.1.1.1/x",
            ] {
                let error = try await api.upload(video, fields: ["callback_url": hook]).error()
                #expect(error.status == 422 && error.code == "invalid_callback_url", "\(hook): \(error)")
                #expect(error.message.hasPrefix("callback_url ") && error.message.hasSuffix("."), "\(error.message)")
            }
            #expect(try await api.store.listJobs().isEmpty)
            // A public address on a standard port is accepted.
            let accepted = try await api.upload(video, fields: ["callback_url": "https://1.1.1.1/hook"]).json()
            #expect(accepted["job_id"] is String)
        }
    }

    /// Forms built to hurt: each is refused with its own code, and nothing of it is kept.
    func hostileForms(_ api: InProcessAPI, video: Data) async throws -> [(String, InProcessAPI.Reply, Int, String)] {
        let b = "hostile-\(UUID().uuidString)"
        func part(_ name: String, _ value: Data, filename: String? = nil) -> Data {
            let disposition = "form-data; name=\"\(name)\"" + (filename.map { "; filename=\"\($0)\"" } ?? "")
            return Data("--\(b)\r\nContent-Disposition: \(disposition)\r\n\r\n".utf8) + value + Data("\r\n".utf8)
        }
        let close = Data("--\(b)--\r\n".utf8)
        let twoFiles = part("file", video, filename: "a.mov") + part("file", video, filename: "b.mov") + close
        let flood =
            (0..<5000).reduce(into: Data()) { body, i in body += part("f\(i)", Data("x".utf8)) } + part("file", video, filename: "a.mov") + close
        let endlessHeader = Data("--\(b)\r\nContent-Disposition: form-data; name=\"".utf8) + Data(repeating: 0x61, count: 1 << 20)
        let manyFieldBytes =
            (0..<10).reduce(into: Data()) { body, i in body += part("f\(i)", Data(repeating: 0x78, count: 1000)) }
            + part("file", video, filename: "a.mov") + close
        // A complete field, then the video cut short: it used to be accepted as a shorter video.
        let truncated = part("quality", Data("low".utf8)) + part("file", video, filename: "a.mov").prefix(video.count / 2)
        return [
            ("two 'file' parts", try await api.upload(raw: twoFiles, boundary: b), 400, "duplicate_file"),
            ("5,000 one-byte fields", try await api.upload(raw: flood, boundary: b), 400, "too_many_parts"),
            ("a part header with no line break", try await api.upload(raw: endlessHeader, boundary: b), 400, "part_headers_too_large"),
            ("10 KB of text fields", try await api.upload(raw: manyFieldBytes, boundary: b), 400, "fields_too_large"),
            ("a file part cut short after a complete field", try await api.upload(raw: truncated, boundary: b), 400, "invalid_request"),
            ("a boundary of 71 characters", try await api.upload(raw: close, boundary: String(repeating: "b", count: 71)), 400, "invalid_request"),
        ]
    }
}
