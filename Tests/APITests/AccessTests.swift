import Foundation
import JobStore
import PostgresNIO
import ServiceTestSupport
import Testing

/// Who may do what: device tokens, owners, plans and quotas, rate limits — on the running API.
@Suite("Devices, owners, quotas and rate limits (real processes and servers)", .serialized)
struct AccessTests {
    typealias System = APIEndToEndTests

    static func status(_ reply: (status: Int, body: String)) -> Int { reply.status }

    @Test("Tokens: required by default, shown once, hashed at rest; a job is visible only to its owner")
    func tokensAndOwners() async throws {
        try await TestServices.withDatabase { store, databaseURL in
            try await System.withSystem(workers: 0, settings: ["AUTH_REQUIRED": "true"], databaseURL: databaseURL) { base in
                let upload = "\(base)/api/v1/upload"
                let video = "file=@\(TestFootage.twentySeconds);type=video/mp4"

                let anonymous = try curl(["-D", "-", "-F", video, upload])
                #expect(anonymous.status == 401 && anonymous.body.contains("auth_required"), "\(anonymous.body)")
                #expect(anonymous.body.lowercased().contains("www-authenticate: bearer"))
                let forged = try System.error(try curl(["-H", "Authorization: Bearer mdt_forged", "\(base)/api/v1/me"]))
                #expect(forged.status == 401 && forged.code == "invalid_token")
                let malformed = try System.error(try curl(["-H", "Authorization: Basic dXNlcjpwYXNz", "\(base)/api/v1/me"]))
                #expect(malformed.status == 401 && malformed.code == "invalid_token")
                #expect(try curl(["\(base)/api/v1/upload/formats"]).status == 200, "formats need no token")

                let registration = try curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"name": "Anna's iPhone"}"#,
                                             "\(base)/api/v1/devices"])
                #expect(registration.status == 201)
                let registered = try System.json(registration.body)
                let token = try #require(registered["token"] as? String)
                let deviceID = try #require(registered["device_id"] as? String)
                #expect(token.hasPrefix("mdt_") && token.count == 47 && registered["plan"] as? String == "free")
                // Only the hash is stored.
                let stored = try await store.client.query("SELECT token_sha256 FROM devices WHERE id = \(UUID(uuidString: deviceID)!)")
                    .collect().first?.decode(String.self)
                #expect(stored?.count == 64 && stored != token && !(stored ?? "").contains(token))

                let anna = ["-H", "Authorization: Bearer \(token)"]
                let ben = try System.device(base, name: "Ben's iPhone")
                let accepted = try curl(anna + ["-F", video, "-F", "target_duration=5", upload])
                #expect(accepted.status == 200, "\(accepted.body)")
                let id = try #require(try System.json(accepted.body)["job_id"] as? String)
                #expect(try await store.job(UUID(uuidString: id)!)?.owner == deviceID.lowercased())

                #expect(try curl(anna + ["\(base)/api/v1/jobs/\(id)/status"]).status == 200)
                for (method, path) in [("GET", "/status"), ("GET", ""), ("GET", "/download"), ("GET", "/events"), ("DELETE", ""),
                                       ("POST", "/start")] {
                    let reply = try System.error(try curl(ben + ["-X", method, "--max-time", "5", "\(base)/api/v1/jobs/\(id)\(path)"]))
                    #expect(reply.status == 404 && reply.code == "job_not_found", "Ben \(method) \(path): \(reply)")
                }
                let nobody = try System.error(try curl(["\(base)/api/v1/jobs/\(id)/status"]))
                #expect(nobody.status == 401)
                #expect(try await store.job(UUID(uuidString: id)!)?.status == .pending, "Ben's DELETE changed nothing")

                // A revoked token is refused from then on.
                try await store.client.query("UPDATE devices SET revoked_at = now() WHERE id = \(UUID(uuidString: deviceID)!)")
                let revoked = try System.error(try curl(anna + ["\(base)/api/v1/jobs/\(id)/status"]))
                #expect(revoked.status == 401 && revoked.code == "invalid_token")
            }
        }
    }

    @Test("Plans: free has a monthly quota (402 quota_exceeded before any bytes are taken), pro is unlimited; /me shows both")
    func plansAndQuotas() async throws {
        try await TestServices.withDatabase { store, databaseURL in
            try await System.withSystem(workers: 0, settings: ["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "2"],
                                        databaseURL: databaseURL) { base in
                let upload = "\(base)/api/v1/upload"
                let video = "file=@\(TestFootage.twentySeconds);type=video/mp4"
                let auth = try System.device(base)
                var me = try System.json(try curl(auth + ["\(base)/api/v1/me"]).body)
                let usage = try #require(me["usage"] as? [String: Any], "\(me)")
                #expect(me["plan"] as? String == "free" && me["plan_description"] as? String == "Free: 2 videos/month")
                #expect(usage["used"] as? Int == 0 && usage["limit"] as? Int == 2 && usage["remaining"] as? Int == 2)
                let resets = try #require(usage["resets_at"] as? String)
                #expect(resets.hasSuffix("-01T00:00:00Z"), "the next calendar month, UTC: \(resets)")

                var ids: [String] = []
                for _ in 0..<2 {
                    let reply = try curl(auth + ["-F", video, "-F", "target_duration=5", upload])
                    #expect(reply.status == 200, "\(reply.body)")
                    ids.append(try #require(try System.json(reply.body)["job_id"] as? String))
                }
                let over = try System.error(try curl(auth + ["-F", video, upload]))
                #expect(over.status == 402 && over.code == "quota_exceeded" && over.message.contains("2 of your 2"), "\(over)")
                // Cancelled jobs give their highlight back.
                #expect(try curl(auth + ["-X", "DELETE", "\(base)/api/v1/jobs/\(ids[0])"]).status == 200)
                me = try System.json(try curl(auth + ["\(base)/api/v1/me"]).body)
                #expect((me["usage"] as? [String: Any])?["used"] as? Int == 1)
                #expect(try curl(auth + ["-F", video, upload]).status == 200)
                #expect(try System.error(try curl(auth + ["-F", video, upload])).code == "quota_exceeded")

                // Pro, set with SQL as docs/operations.md says: unlimited.
                let device = try #require(me["device_id"] as? String)
                try await store.client.query("UPDATE devices SET plan = 'pro' WHERE id = \(UUID(uuidString: device)!)")
                me = try System.json(try curl(auth + ["\(base)/api/v1/me"]).body)
                #expect(me["plan"] as? String == "pro" && me["plan_description"] as? String == "Pro: Unlimited")
                #expect((me["usage"] as? [String: Any])?["limit"] is NSNull)
                #expect(try curl(auth + ["-F", video, upload]).status == 200)
                let count = try await store.client.query("SELECT count(*)::int FROM jobs WHERE owner = \(device)").collect().first?.decode(Int.self)
                #expect(count == 4, "two, one cancelled, one more, one as pro; the refusals wrote nothing")
            }
        }
    }

    @Test("Concurrent uploads cannot overrun the quota: the count and the insert share a lock per owner")
    func quotaUnderConcurrency() async throws {
        try await TestServices.withDatabase { store, databaseURL in
            try await System.withSystem(workers: 0, settings: ["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "3"],
                                        databaseURL: databaseURL) { base in
                let auth = try System.device(base)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            try curl(auth + ["-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "\(base)/api/v1/upload"]).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == 200 }.count == 3, "\(statuses)")
                #expect(statuses.filter { $0 == 402 }.count == 5, "\(statuses)")
                let count = try await store.client.query("SELECT count(*)::int FROM jobs").collect().first?.decode(Int.self)
                #expect(count == 3)
            }
        }
    }

    @Test("Rate limits per device and per address answer 429 with Retry-After, shared through Redis")
    func rateLimits() async throws {
        let text = FileManager.default.temporaryDirectory.appendingPathComponent("moments-notvideo-\(UUID().uuidString).mp4")
        try Data("not a video\n".utf8).write(to: text)
        defer { try? FileManager.default.removeItem(at: text) }
        try await System.withSystem(workers: 0, settings: [
            "AUTH_REQUIRED": "true", "RATE_LIMIT_UPLOADS_PER_OWNER": "2", "RATE_LIMIT_UPLOADS_PER_IP": "3", "RATE_LIMIT_WINDOW_SECONDS": "30",
        ]) { base in
            let upload = "\(base)/api/v1/upload"
            // Small files that fail the probe: the limit counts attempts, before any bytes are read.
            let file = "file=@\(text.path);type=video/mp4"
            let first = try System.device(base), second = try System.device(base)
            #expect(try curl(first + ["-F", file, upload]).status == 415)
            #expect(try curl(first + ["-F", file, upload]).status == 415)
            let limited = try curl(first + ["-D", "-", "-F", file, upload])
            #expect(limited.status == 429 && limited.body.contains("rate_limited"), "\(limited.body)")
            let retryAfter = limited.body.split(separator: "\r\n").first { $0.lowercased().hasPrefix("retry-after:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
            #expect((1...30).contains(retryAfter ?? 0), "Retry-After: \(String(describing: retryAfter))")
            // Another device from the same address has room of its own, until the address's limit (3).
            #expect(try curl(second + ["-F", file, upload]).status == 415)
            let byAddress = try System.error(try curl(second + ["-F", file, upload]))
            #expect(byAddress.status == 429 && byAddress.code == "rate_limited")
            // Direct-upload reservations count too.
            #expect(try curl(second + ["-X", "POST", "\(base)/api/v1/uploads"]).status == 429)
        }
    }
}
