import Foundation
import HTTPTypes
import ServiceTestSupport
import Testing

/// Every malformed request ends in a status, a stable code and a sentence, and takes nothing: in
/// process, against real PostgreSQL and the in-memory queue.
@Suite("Bad requests (in process)")
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
                ("a callback without a secret", try await api.upload(video, fields: ["callback_url": "https://example.com/hook"]),
                 422, "webhooks_disabled"),
                ("a shopping list", try await api.upload(Data("milk, eggs, bread\n".utf8)), 415, "not_a_video"),
                ("3 MiB over a 2 MiB limit", try await api.upload(Data(count: 3 << 20)), 413, "file_too_large"),
                ("an unknown job", try await api.get("/api/v1/jobs/\(UUID().uuidString)/status"), 404, "job_not_found"),
                ("not a job id", try await api.get("/api/v1/jobs/not-a-uuid/status"), 404, "job_not_found"),
                ("cancel an unknown job", try await api.send(.delete, "/api/v1/jobs/\(UUID().uuidString)"), 404, "job_not_found"),
                ("an unknown route", try await api.get("/api/v1/nowhere"), 404, "not_found"),
            ]
            for (name, reply, status, code) in cases {
                let error = try reply.error()
                #expect(error.status == status && error.code == code, "\(name): \(error)")
                #expect(error.message.hasSuffix("."), "\(name): a sentence: \(error.message)")
            }
            #expect(try await api.store.listJobs().isEmpty, "no refused request left a job")
            #expect(try await api.queue.stats().ready == 0)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: api.uploads.path)
            #expect(leftovers.isEmpty, "no refused upload left a file: \(leftovers)")
            let formats = try await api.get("/api/v1/upload/formats").json()
            #expect(formats["max_size_bytes"] as? Int == 2 << 20)
            #expect(formats["qualities"] as? [String] == ["high", "medium", "low"])
        }
    }
}
