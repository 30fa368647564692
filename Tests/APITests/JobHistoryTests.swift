import Foundation
import HTTPTypes
import JobStore
import MomentsModel
import Testing

/// `GET /api/v1/jobs`: a device's history, through the API in this process.
@Suite("Job history", .quiet)
struct JobHistoryTests {
    @Test("120 jobs page by cursor, newest first, without gaps or repeats; filtered by status; only the device's own")
    func pagesOverADevicesJobs() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "1000"]) { api in
            let store = api.store
            let (anna, annaOwner) = try await Self.register(api)
            let (ben, benOwner) = try await Self.register(api)
            // Two uploaded through the API (one cancelled), 118 written as the API writes them.
            var uploaded: [String] = []
            for _ in 0..<2 {
                let reply = try await api.upload(try InProcessAPI.footage, headers: anna)
                uploaded.append(try #require(try reply.json()["job_id"] as? String, "\(reply.text)"))
            }
            #expect(try await api.send(.delete, "/api/v1/jobs/\(uploaded[1])", headers: anna).status == 200)
            for index in 0..<118 {
                _ = try await store.create(
                    NewJob(owner: annaOwner, originalFilename: "clip-\(index).mov", sourceKey: "sources/planted-\(index).mp4"))
            }
            for index in 0..<5 {
                _ = try await store.create(NewJob(owner: benOwner, sourceKey: "sources/ben-\(index).mp4"))
            }

            var seen: [String] = []
            var createdAt: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let reply = try await api.get("/api/v1/jobs?limit=50" + (cursor.map { "&cursor=\($0)" } ?? ""), headers: anna)
                #expect(reply.status == 200, "\(reply.text)")
                let page = try reply.json()
                let jobs = try #require(page["jobs"] as? [[String: Any]])
                #expect(page.keys.contains("next_cursor"))
                for job in jobs {
                    for key in [
                        "job_id", "status", "progress", "message", "result_url", "created_at", "completed_at", "original_filename",
                        "duration", "segments_selected",
                    ] {
                        #expect(job.keys.contains(key), "each job as /status shows it: \(key)")
                    }
                    seen.append(job["job_id"] as? String ?? "")
                    createdAt.append(job["created_at"] as? String ?? "")
                }
                cursor = page["next_cursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3 && seen.count == 120, "50 + 50 + 20: \(pages) pages, \(seen.count) jobs")
            #expect(Set(seen).count == 120, "no job twice")
            #expect(createdAt == createdAt.sorted(by: >), "newest first")
            #expect(Set(uploaded).isSubset(of: Set(seen)))

            let cancelled = try await api.get("/api/v1/jobs?status=cancelled", headers: anna).json()
            #expect((cancelled["jobs"] as? [[String: Any]])?.compactMap { $0["job_id"] as? String } == [uploaded[1]])
            #expect(cancelled["next_cursor"] is NSNull, "null on the last page")
            let either = try await api.get("/api/v1/jobs?status=cancelled,pending&limit=100", headers: anna).json()
            #expect((either["jobs"] as? [Any])?.count == 100 && either["next_cursor"] is String)

            let bens = try await api.get("/api/v1/jobs", headers: ben).json()
            #expect((bens["jobs"] as? [Any])?.count == 5, "another device sees only its own")
            #expect(try await api.get("/api/v1/jobs").status == 401)
            for (query, code) in [
                ("limit=0", "invalid_limit"), ("limit=101", "invalid_limit"), ("limit=x", "invalid_limit"),
                ("status=done", "invalid_status"), ("cursor=nonsense", "invalid_cursor"),
            ] {
                let refused = try await api.get("/api/v1/jobs?\(query)", headers: anna).error()
                #expect(refused.status == 400 && refused.code == code, "\(query): \(refused)")
            }
        }
    }

    /// A new device: the headers that send its token, and its owner id.
    static func register(_ api: InProcessAPI) async throws -> (HTTPFields, String) {
        let reply = try await api.post("/api/v1/devices", json: [:]).json()
        let token = try #require(reply["token"] as? String)
        let id = try #require(reply["device_id"] as? String)
        return ([.authorization: "Bearer \(token)"], id.lowercased())
    }
}
