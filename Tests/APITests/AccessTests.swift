import Foundation
import HTTPTypes
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// Who may do what: device tokens, owners, plans and quotas, rate limits. In process, against
/// real PostgreSQL and the in-memory queue and rate-limit store (`SharedStoreTests` holds the
/// in-memory store to the Redis one's rules).
@Suite("Devices, owners, quotas and rate limits (in process)", .quiet)
struct AccessTests {
    static var video: Data {
        get throws { try InProcessAPI.footage }
    }

    @Test("Tokens: required by default, shown once, hashed at rest; a job is visible only to its owner")
    func tokensAndOwners() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true"]) { api in
            let anonymous = try await api.upload(try Self.video)
            #expect(try anonymous.error().code == "auth_required" && anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate")?.lowercased().hasPrefix("bearer") == true)
            let forged = try await api.get("/api/v1/me", headers: [.authorization: "Bearer mdt_forged"]).error()
            #expect(forged.status == 401 && forged.code == "invalid_token")
            let malformed = try await api.get("/api/v1/me", headers: [.authorization: "Basic dXNlcjpwYXNz"]).error()
            #expect(malformed.status == 401 && malformed.code == "invalid_token")
            #expect(try await api.get("/api/v1/upload/formats").status == 200, "formats need no token")

            let registration = try await api.post("/api/v1/devices", json: ["name": "Anna's iPhone"])
            #expect(registration.status == 201)
            let registered = try registration.json()
            let token = try #require(registered["token"] as? String)
            let deviceID = try #require(registered["device_id"] as? String)
            #expect(token.hasPrefix("mdt_") && token.count == 47 && registered["plan"] as? String == "free")
            // Only the hash is stored.
            let stored = try await api.store.client.query("SELECT token_sha256 FROM devices WHERE id = \(UUID(uuidString: deviceID)!)")
                .collect().first?.decode(String.self)
            #expect(stored?.count == 64 && stored != token && !(stored ?? "").contains(token))

            let anna: HTTPFields = [.authorization: "Bearer \(token)"]
            let ben = try await api.device(name: "Ben's iPhone")
            let accepted = try await api.upload(try Self.video, fields: ["target_duration": "5"], headers: anna)
            #expect(accepted.status == 200, "\(accepted.text)")
            let id = try #require(try accepted.json()["job_id"] as? String)
            #expect(try await api.store.job(UUID(uuidString: id)!)?.owner == deviceID.lowercased())
            #expect(try await api.queue.contains([UUID(uuidString: id)!]) == [true], "queued")

            #expect(try await api.get("/api/v1/jobs/\(id)/status", headers: anna).status == 200)
            for (method, path) in [
                (HTTPRequest.Method.get, "/status"), (.get, ""), (.get, "/download"), (.get, "/events"), (.delete, ""),
                (.post, "/start"),
            ] {
                let reply = try await api.send(method, "/api/v1/jobs/\(id)\(path)", headers: ben).error()
                #expect(reply.status == 404 && reply.code == "job_not_found", "Ben \(method) \(path): \(reply)")
            }
            #expect(try await api.get("/api/v1/jobs/\(id)/status").status == 401)
            #expect(try await api.store.job(UUID(uuidString: id)!)?.status == .pending, "Ben's DELETE changed nothing")

            // A revoked token is refused from then on.
            try await api.store.client.query("UPDATE devices SET revoked_at = now() WHERE id = \(UUID(uuidString: deviceID)!)")
            let revoked = try await api.get("/api/v1/jobs/\(id)/status", headers: anna).error()
            #expect(revoked.status == 401 && revoked.code == "invalid_token")
        }
    }

    @Test("Plans: free has a monthly quota (402 quota_exceeded before any bytes are taken), pro is unlimited; /me shows both")
    func plansAndQuotas() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "2"]) { api in
            let auth = try await api.device()
            var me = try await api.get("/api/v1/me", headers: auth).json()
            let usage = try #require(me["usage"] as? [String: Any], "\(me)")
            #expect(me["plan"] as? String == "free" && me["plan_description"] as? String == "Free: 2 videos/month")
            #expect(usage["used"] as? Int == 0 && usage["limit"] as? Int == 2 && usage["remaining"] as? Int == 2)
            let resets = try #require(usage["resets_at"] as? String)
            #expect(resets.hasSuffix("-01T00:00:00Z"), "the next calendar month, UTC: \(resets)")

            var ids: [String] = []
            for _ in 0..<2 {
                let reply = try await api.upload(try Self.video, fields: ["target_duration": "5"], headers: auth)
                #expect(reply.status == 200, "\(reply.text)")
                ids.append(try #require(try reply.json()["job_id"] as? String))
            }
            let over = try await api.upload(try Self.video, headers: auth).error()
            #expect(over.status == 402 && over.code == "quota_exceeded" && over.message.contains("2 of your 2"), "\(over)")
            // Cancelled jobs give their highlight back.
            #expect(try await api.send(.delete, "/api/v1/jobs/\(ids[0])", headers: auth).status == 200)
            me = try await api.get("/api/v1/me", headers: auth).json()
            #expect((me["usage"] as? [String: Any])?["used"] as? Int == 1)
            #expect(try await api.upload(try Self.video, headers: auth).status == 200)
            #expect(try await api.upload(try Self.video, headers: auth).error().code == "quota_exceeded")

            // Pro, set with SQL as docs/data-plane.md says: unlimited.
            let device = try #require(me["device_id"] as? String)
            try await api.store.client.query("UPDATE devices SET plan = 'pro' WHERE id = \(UUID(uuidString: device)!)")
            me = try await api.get("/api/v1/me", headers: auth).json()
            #expect(me["plan"] as? String == "pro" && me["plan_description"] as? String == "Pro: Unlimited")
            #expect((me["usage"] as? [String: Any])?["limit"] is NSNull)
            #expect(try await api.upload(try Self.video, headers: auth).status == 200)
            let count = try await api.store.client.query("SELECT count(*)::int FROM jobs WHERE owner = \(device)").collect().first?.decode(Int.self)
            #expect(count == 4, "two, one cancelled, one more, one as pro; the refusals wrote nothing")
            #expect(try await api.queue.contains(ids.compactMap(UUID.init(uuidString:))) == [false, true], "the cancelled job left the queue")
        }
    }

    @Test("Concurrent uploads cannot overrun the quota: the count and the insert share a lock per owner")
    func quotaUnderConcurrency() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "3"]) { api in
            let auth = try await api.device()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await api.upload(try Self.video, headers: auth).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 3, "\(statuses)")
            #expect(statuses.filter { $0 == 402 }.count == 5, "\(statuses)")
            let count = try await api.store.client.query("SELECT count(*)::int FROM jobs").collect().first?.decode(Int.self)
            #expect(count == 3)
        }
    }

    @Test("Rate limits per device and per address (the nearest trusted proxy's X-Forwarded-For): 429 with Retry-After, RateLimit-* stated")
    func rateLimits() async throws {
        try await InProcessAPI.run(
            [
                "AUTH_REQUIRED": "true", "RATE_LIMIT_UPLOADS_PER_OWNER": "2", "RATE_LIMIT_UPLOADS_PER_IP": "3", "RATE_LIMIT_WINDOW_SECONDS": "30",
                "TRUSTED_PROXY_HOPS": "1",
            ], presigning: true
        ) { api in
            // Small files that fail the probe: the limit counts attempts, before any bytes are read.
            let file = Data("not a video\n".utf8)
            let address: HTTPFields = [HTTPField.Name("X-Forwarded-For")!: "203.0.113.7"]
            let first = try await api.device(headers: address), second = try await api.device(headers: address)
            // Every answer of a counted request states the limit with the least room (the device's
            // 2 before the address's 3), errors after the count included.
            func stated(_ reply: InProcessAPI.Reply) -> [Int?] {
                ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"].map { reply.header($0).flatMap { Int($0) } }
            }
            let counted = try await api.upload(file, headers: first)
            #expect(counted.status == 415 && stated(counted)[0...1] == [2, 1], "\(stated(counted))")
            #expect((29...30).contains(stated(counted)[2] ?? 0), "the window, from this request: \(stated(counted))")
            let last = try await api.upload(file, headers: first)
            #expect(last.status == 415 && stated(last)[0...1] == [2, 0], "\(stated(last))")
            let limited = try await api.upload(file, headers: first)
            #expect(try limited.error().code == "rate_limited" && limited.status == 429, "\(limited.text)")
            let retryAfter = limited.header("Retry-After").flatMap { Int($0) }
            #expect((1...30).contains(retryAfter ?? 0), "Retry-After: \(String(describing: retryAfter))")
            #expect(stated(limited) == [2, 0, retryAfter], "\(stated(limited))")
            // Requests no limit counts say nothing of one.
            #expect(try await api.get("/api/v1/me", headers: first).header("RateLimit-Limit") == nil)
            // Another device from the same address has room of its own, until the address's limit (3).
            #expect(try await api.upload(file, headers: second).status == 415)
            let byAddress = try await api.upload(file, headers: second).error()
            #expect(byAddress.status == 429 && byAddress.code == "rate_limited")
            // Direct-upload reservations count too.
            let reservation = try await api.send(.post, "/api/v1/uploads", headers: second)
            #expect(reservation.status == 429, "\(reservation.status) \(reservation.text)")
            // Another address is not held to the first one's count.
            var elsewhere = second
            elsewhere[HTTPField.Name("X-Forwarded-For")!] = "198.51.100.9"
            let third = try await api.device(headers: elsewhere)
            #expect(try await api.upload(file, headers: third).status == 415)
        }
    }

    @Test("New devices per network per day are limited (IPv6 counts by /64), so new devices cannot reset the free quota all day")
    func registrationsPerDay() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true", "TRUSTED_PROXY_HOPS": "1", "REGISTRATIONS_PER_IP_PER_DAY": "3"]) { api in
            func register(_ address: String) async throws -> InProcessAPI.Reply {
                try await api.post("/api/v1/devices", json: [:], headers: [HTTPField.Name("X-Forwarded-For")!: address])
            }
            for remaining in [2, 1, 0] {
                let registered = try await register("203.0.113.5")
                // Of the address's two limits (30 a minute, 3 a day), the day's has less room.
                #expect(registered.status == 201 && registered.header("RateLimit-Limit") == "3", "\(registered.text)")
                #expect(registered.header("RateLimit-Remaining") == String(remaining))
                #expect((86_000...86_400).contains(Int(registered.header("RateLimit-Reset") ?? "") ?? 0))
            }
            let refused = try await register("203.0.113.5")
            let error = try refused.error()
            #expect(refused.status == 429 && error.code == "rate_limited" && error.message.contains("hour"), "\(error)")
            let wait = Int(refused.header("Retry-After") ?? "") ?? 0
            #expect(wait > 86_000 && wait <= 86_400, "a day's window: \(wait)")
            #expect(refused.header("RateLimit-Remaining") == "0" && refused.header("RateLimit-Reset") == String(wait))
            #expect(try await register("203.0.113.6").status == 201, "another address has its own count")

            for host in ["1", "ffff", "abcd:1"] { #expect(try await register("2001:db8:1:2::\(host)").status == 201) }
            #expect(try await register("2001:db8:1:2:9::1").status == 429, "the same /64")
            #expect(try await register("2001:db8:1:3::1").status == 201, "the next /64 is another subscriber")
        }
    }
}
