import Foundation
import HTTPTypes
import ServiceTestSupport
import Testing

/// Both ways in, in process: a multipart upload, and a direct upload (reserve, PUT to storage,
/// start). The end-to-end tests run the same through real processes, S3 and workers.
@Suite("Uploads (in process)")
struct UploadTests {
    @Test("An upload in the contract's form is accepted: the job is written, queued, and its source stored")
    func acceptedUpload() async throws {
        try await InProcessAPI.run { api in
            let reply = try await api.upload(try InProcessAPI.footage, filename: "IMG_0042.MOV",
                                             fields: ["target_duration": "8", "quality": "low"])
            #expect(reply.status == 200, "\(reply.text)")
            let body = try reply.json()
            #expect(body["message"] as? String == "Video uploaded, processing started" && body["estimated_time"] is Int)
            let id = try #require(UUID(uuidString: body["job_id"] as? String ?? ""))
            let job = try #require(try await api.store.job(id))
            #expect(job.status == .pending && job.targetDuration == 8 && job.quality == .low && job.originalFilename == "IMG_0042.MOV")
            #expect(try await api.queue.contains([id]) == [true])
            #expect(try await api.storage.head(key: job.sourceKey).size == Int64(try InProcessAPI.footage.count), "the source is stored whole")
            let status = try await api.get("/api/v1/jobs/\(id)/status").json()
            #expect(status["status"] as? String == "pending" && status["progress"] as? Int == 0)
            let created = try #require(status["created_at"] as? String)
            #expect(created.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil, "no fractions: \(created)")
        }
    }

    @Test("Direct upload: reserve a signed PUT, start refuses until the object is there, then queues the job once")
    func directUpload() async throws {
        try await InProcessAPI.run(presigning: true) { api in
            let reserve = try await api.post("/api/v1/uploads", json: ["filename": "big.mov", "target_duration": 6, "quality": "low",
                                                                       "codec": "h264"])
            #expect(reserve.status == 200, "\(reserve.text)")
            let reserved = try reserve.json()
            let id = try #require(UUID(uuidString: reserved["job_id"] as? String ?? ""))
            let url = try #require(URL(string: reserved["upload_url"] as? String ?? ""))
            #expect(url.host == "storage.test" && url.query?.contains("X-Method=PUT") == true, "\(url)")
            #expect(try await api.store.job(id) == nil, "a reservation is not a job yet")

            let early = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(early.status == 409 && early.code == "upload_missing")

            // What the app's PUT to the signed URL does.
            let key = String(url.path.dropFirst())
            _ = try await api.storage.put(key: key, from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
            let started = try await api.send(.post, "/api/v1/jobs/\(id)/start")
            let startedID = try started.json()["job_id"] as? String
            #expect(started.status == 200 && startedID == id.uuidString.lowercased(), "\(started.text)")
            #expect(try await api.send(.post, "/api/v1/jobs/\(id)/start").status == 200, "starting twice is harmless")
            #expect(try await api.queue.contains([id]) == [true])
            #expect(try await api.queue.stats().ready == 1, "queued once")
            let details = try await api.get("/api/v1/jobs/\(id)").json()
            #expect(details["original_filename"] as? String == "big.mov" && details["target_duration"] as? Double == 6)
            #expect(details["codec"] as? String == "h264" && details["quality"] as? String == "low")
        }
    }
}
