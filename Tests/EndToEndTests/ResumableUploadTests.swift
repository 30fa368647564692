import Foundation
import JobStore
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Storage
import Testing

/// Resumable uploads (API 1.1) through real processes: `moments api`, `moments worker`, and
/// `moments submit --resumable` (MomentsKit) as the client, against SeaweedFS's multipart uploads.
@Suite("Resumable uploads (real processes and servers)", .serialized, .heavy)
struct ResumableUploadTests {
    typealias System = LiveSystem

    @Test("Interrupted after half its parts, resumed by a new process: the missing parts only, one job, one quota slot")
    func interruptedAndResumed() async throws {
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true", "UPLOAD_PART_MIB": "5"]) { base in
            let auth = try CurlAPI.device(base)
            let token = try #require(auth.last?.replacingOccurrences(of: "Authorization: Bearer ", with: ""))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: TestFootage.large)[.size] as? NSNumber).int64Value
            let partSize = Int64(5 << 20)
            let count = Int((size + partSize - 1) / partSize)
            try #require(count >= 4, "the fixture is \(size) bytes: \(count) parts")
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("moments-resumable-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let submit = [
                "submit", TestFootage.large, "--server", base, "--token", token, "--duration", "8", "--quality", "low",
                "--resumable", "--state-dir", state.path,
            ]

            // The first run stops after half the parts, as an app killed mid-upload would.
            let first = try TestServices.moments(submit + ["--stop-after-parts", "\(count / 2)"], environment: [:])
            #expect(first.status == 75, "\(first.out) \(first.err)")
            let saved = try #require(try FileManager.default.contentsOfDirectory(atPath: state.path).first { $0.hasSuffix(".json") })
            let record = try CurlAPI.json(String(decoding: try Data(contentsOf: state.appendingPathComponent(saved)), as: UTF8.self))
            let id = try #require(record["job_id"] as? String, "\(record)").lowercased()

            let parts = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/uploads/\(id)/parts"]).body)
            let listed = try #require(parts["parts"] as? [[String: Any]])
            #expect(parts["part_size"] as? Int64 == partSize || (parts["part_size"] as? Int).map(Int64.init) == partSize)
            #expect(listed.count == count && listed.filter { $0["received"] as? Bool == true }.count == count / 2, "\(listed)")
            #expect(listed.allSatisfy { ($0["received"] as? Bool == true) == ($0["url"] == nil) }, "URLs only for missing parts")
            let early = try CurlAPI.error(try curl(auth + ["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"]))
            #expect(early.status == 409 && early.code == "upload_incomplete" && early.message.contains("\(count / 2) of \(count) parts"), "\(early)")
            let stranger = try CurlAPI.device(base)
            #expect(try CurlAPI.error(try curl(stranger + ["\(base)/api/v1/uploads/\(id)/parts"])).code == "job_not_found")

            // A new process resumes: it sends only the missing parts, then starts the job.
            let second = try TestServices.moments(
                submit + ["--wait", "-o", state.appendingPathComponent("highlight.mp4").path],
                environment: [:])
            #expect(second.status == 0, "\(second.out) \(second.err)")
            #expect(second.out.contains("job \(id)"), "the same job: \(second.out)")
            #expect(abs(try TestFootage.duration(state.appendingPathComponent("highlight.mp4").path) - 8) < 0.6)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: state.path).allSatisfy { !$0.hasSuffix(".json") && !$0.contains("-part-") },
                "the state is gone once started")
            let history = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/jobs"]).body)
            #expect((history["jobs"] as? [Any])?.count == 1, "one job: \(history)")
            let me = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/me"]).body)
            #expect((me["usage"] as? [String: Any])?["used"] as? Int == 1, "one highlight of the quota: \(me)")
            let after = try CurlAPI.error(try curl(auth + ["\(base)/api/v1/uploads/\(id)/parts"]))
            #expect(after.status == 409 && after.code == "already_started", "\(after)")
        }
    }

    @Test("Refused clearly: no size, local storage; repeated under its key, the same multipart upload; gone once aborted")
    func refusalsAndSweep() async throws {
        try await System.withSystem(workers: 0, settings: ["AUTH_REQUIRED": "true", "UPLOAD_PART_MIB": "5"]) { base in
            let auth = try CurlAPI.device(base)
            let json = auth + ["-X", "POST", "-H", "Content-Type: application/json"]
            let noSize = try CurlAPI.error(try curl(json + ["-d", #"{"resumable": true}"#, "\(base)/api/v1/uploads"]))
            #expect(noSize.status == 400 && noSize.code == "size_bytes_required", "\(noSize)")
            let reply = try curl(
                json + [
                    "-H", "Idempotency-Key: sweep-1", "-d", #"{"resumable": true, "size_bytes": 12000000}"#,
                    "\(base)/api/v1/uploads",
                ])
            #expect(reply.status == 200, "\(reply.body)")
            let reserved = try CurlAPI.json(reply.body)
            let id = try #require(reserved["job_id"] as? String)
            #expect(reserved["part_count"] as? Int == 3 && (reserved["parts"] as? [Any])?.count == 3, "\(reserved)")
            #expect((reserved["upload_url"] as? String) == ((reserved["parts"] as? [[String: Any]])?.first?["url"] as? String))
            // The same request again under its key: the same job and the same multipart upload.
            let again = try CurlAPI.json(
                try curl(
                    json + [
                        "-H", "Idempotency-Key: sweep-1", "-d", #"{"resumable": true, "size_bytes": 12000000}"#,
                        "\(base)/api/v1/uploads",
                    ]
                ).body)
            #expect(again["job_id"] as? String == id)

            let storage = try StorageConfiguration.store(environment: Settings(ProcessInfo.processInfo.environment))
            let resumable = try #require(storage.resumable)
            let key = "uploads/\(id)"
            let unfinished = try await resumable.unfinishedUploads(prefix: key)
            #expect(unfinished.count == 1, "one multipart upload for both requests")
            // What the retention sweep does a day later (RetentionTests): abort it.
            for upload in unfinished { try await resumable.abortUpload(key: upload.key, uploadID: upload.uploadID) }
            let gone = try CurlAPI.error(try curl(auth + ["\(base)/api/v1/uploads/\(id)/parts"]))
            #expect(gone.status == 404 && gone.code == "job_not_found", "\(gone)")
        }
        try await System.withSystem(
            storageURL: "file://\(FileManager.default.temporaryDirectory.path)/moments-local-\(UUID().uuidString)",
            workers: 0, settings: ["AUTH_REQUIRED": "false"]
        ) { base in
            let local = try CurlAPI.error(
                try curl([
                    "-X", "POST", "-H", "Content-Type: application/json", "-d",
                    #"{"resumable": true, "size_bytes": 1000}"#, "\(base)/api/v1/uploads",
                ]))
            #expect(local.status == 409 && local.code == "direct_upload_unavailable", "\(local)")
        }
    }
}
