import Foundation
import JobStore
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

/// `GET /api/v1/jobs`: a device's history, through the real API process.
@Suite("Job history (real processes and servers)", .serialized, .heavy)
struct JobHistoryTests {
    typealias System = LiveSystem

    @Test("120 jobs page by cursor, newest first, without gaps or repeats; filtered by status; only the device's own")
    func pagesOverADevicesJobs() async throws {
        try await TestServices.withDatabase { store, databaseURL in
            try await System.withSystem(
                workers: 0, settings: ["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "1000"],
                databaseURL: databaseURL
            ) { base in
                let (anna, annaOwner) = try Self.register(base)
                let (ben, benOwner) = try Self.register(base)
                // Two uploaded through the API (one cancelled), 118 written as the API writes them.
                var uploaded: [String] = []
                for _ in 0..<2 {
                    let reply = try curl(anna + ["-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "\(base)/api/v1/upload"])
                    uploaded.append(try #require(try System.json(reply.body)["job_id"] as? String, "\(reply.body)"))
                }
                #expect(try curl(anna + ["-X", "DELETE", "\(base)/api/v1/jobs/\(uploaded[1])"]).status == 200)
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
                    let reply = try curl(anna + ["\(base)/api/v1/jobs?limit=50" + (cursor.map { "&cursor=\($0)" } ?? "")])
                    #expect(reply.status == 200, "\(reply.body)")
                    let page = try System.json(reply.body)
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

                let cancelled = try System.json(try curl(anna + ["\(base)/api/v1/jobs?status=cancelled"]).body)
                #expect((cancelled["jobs"] as? [[String: Any]])?.compactMap { $0["job_id"] as? String } == [uploaded[1]])
                #expect(cancelled["next_cursor"] is NSNull, "null on the last page")
                let either = try System.json(try curl(anna + ["\(base)/api/v1/jobs?status=cancelled,pending&limit=100"]).body)
                #expect((either["jobs"] as? [Any])?.count == 100 && either["next_cursor"] is String)

                let bens = try System.json(try curl(ben + ["\(base)/api/v1/jobs"]).body)
                #expect((bens["jobs"] as? [Any])?.count == 5, "another device sees only its own")
                #expect(try curl(["\(base)/api/v1/jobs"]).status == 401)
                for (query, code) in [
                    ("limit=0", "invalid_limit"), ("limit=101", "invalid_limit"), ("limit=x", "invalid_limit"),
                    ("status=done", "invalid_status"), ("cursor=nonsense", "invalid_cursor"),
                ] {
                    let refused = try System.error(try curl(anna + ["\(base)/api/v1/jobs?\(query)"]))
                    #expect(refused.status == 400 && refused.code == code, "\(query): \(refused)")
                }
            }
        }
    }

    /// A new device: its token's header arguments and its owner id.
    static func register(_ base: String) throws -> ([String], String) {
        let reply = try System.json(try curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", "{}", "\(base)/api/v1/devices"]).body)
        let token = try #require(reply["token"] as? String)
        let id = try #require(reply["device_id"] as? String)
        return (["-H", "Authorization: Bearer \(token)"], id.lowercased())
    }
}
