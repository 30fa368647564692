import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import MomentsSupport
import ServiceTestSupport
import Testing

/// Webhooks from the running system to a receiver of the test's own (a real HTTP server).
@Suite("Webhooks (real processes and servers)", .serialized, .heavy)
struct WebhookTests {
    typealias System = LiveSystem
    static let secret = "test-secret-0123456789abcdef"

    /// Records every POST; the first attempt of each delivery gets a 500, the next ones a 200.
    actor Receiver {
        struct Request: Sendable {
            var headers: [String: String]
            var body: Data
        }
        var requests: [Request] = []

        func record(_ request: Request) -> HTTPResponse.Status {
            let delivery = request.headers["moments-delivery"] ?? ""
            let earlier = requests.filter { $0.headers["moments-delivery"] == delivery }.count
            requests.append(request)
            return earlier == 0 ? .internalServerError : .ok
        }
    }

    @Test("A callback_url gets a signed POST at the end, retried with backoff after a failure; cancelled jobs are announced too")
    func signedAndRetried() async throws {
        let receiver = Receiver()
        let port = Int.random(in: 10_000..<12_000)
        let router = Router()
        router.post("hook") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            return await receiver.record(.init(headers: headers, body: Data(body.readableBytesView)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        let server = Task { try await app.run() }
        defer { server.cancel() }
        let hook = "http://127.0.0.1:\(port)/hook"

        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await System.withSystem(
                workers: 1,
                settings: [
                    "WEBHOOK_SECRET": Self.secret, "WEBHOOK_RETRY_BASE_SECONDS": "1",
                    // The receiver is on this machine, on a port of its own.
                    "WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_ALLOWED_PORTS": "*",
                ],
                databaseURL: databaseURL
            ) { base in
                let upload = "\(base)/api/v1/upload"
                let video = "file=@\(TestFootage.twentySeconds);type=video/mp4"
                let bad = try CurlAPI.error(try curl(["-F", video, "-F", "callback_url=ftp://example.com/x", upload]))
                #expect(bad.status == 422 && bad.code == "invalid_callback_url")

                let done = try #require(
                    try CurlAPI.json(
                        try curl([
                            "-F", video, "-F", "target_duration=5", "-F", "quality=low",
                            "-F", "callback_url=\(hook)", upload,
                        ]).body)["job_id"] as? String)
                // The app's metadata comes back in the webhook's job.
                let cancelled = try #require(
                    try CurlAPI.json(
                        try curl(["-F", video, "-F", "callback_url=\(hook)", "--form-string", #"metadata={"album": "a/1"}"#, upload]).body)["job_id"]
                        as? String)
                #expect(try curl(["-X", "DELETE", "\(base)/api/v1/jobs/\(cancelled)"]).status == 200)

                let arrived = try await TestServices.eventually(timeout: .seconds(90)) { await receiver.requests.count >= 4 }
                #expect(arrived, "two attempts for each of two deliveries")
                let requests = await receiver.requests
                for (job, event) in [(done, "job.completed"), (cancelled, "job.cancelled")] {
                    let attempts = try requests.filter { request in
                        let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
                        return (body["job"] as? [String: Any])?["job_id"] as? String == job
                    }
                    #expect(attempts.count == 2, "\(event): a 500, then a retry")
                    #expect(Set(attempts.map { $0.headers["moments-delivery"] ?? "" }).count == 1, "the same delivery id on the retry")
                    for attempt in attempts {
                        #expect(attempt.headers["moments-event"] == event)
                        #expect(attempt.headers["content-type"] == "application/json")
                        let signature = try #require(attempt.headers["moments-signature"])
                        #expect(Self.verify(signature, body: attempt.body), "HMAC-SHA256 over t.body: \(signature)")
                        let body = try #require(try JSONSerialization.jsonObject(with: attempt.body) as? [String: Any])
                        #expect(body["event"] as? String == event)
                        let status = (body["job"] as? [String: Any])?["status"] as? String
                        #expect(status == String(event.dropFirst(4)))
                        let metadata = (body["job"] as? [String: Any])?["metadata"] as? [String: String]
                        #expect(metadata == (job == cancelled ? ["album": "a/1"] : nil), "\(event): \(String(describing: metadata))")
                    }
                    // The worker records the answer after the receiver has seen the request.
                    var deliveries = try await store.webhookDeliveries(job: UUID(uuidString: job)!)
                    _ = try await TestServices.eventually(timeout: .seconds(10)) {
                        deliveries = try await store.webhookDeliveries(job: UUID(uuidString: job)!)
                        return deliveries.first?.delivered == true
                    }
                    try #require(deliveries.count == 1, "\(deliveries)")
                    #expect(
                        deliveries[0].delivered && deliveries[0].attempts == 2 && deliveries[0].lastStatus == 200,
                        "\(deliveries)")
                }
                // A forged body does not verify.
                let first = try #require(requests.first)
                #expect(!Self.verify(first.headers["moments-signature"] ?? "", body: first.body + Data(" ".utf8)))
            }
        }
    }

    /// Records every POST to `/hook/<name>` and answers 200.
    actor Log {
        struct Request: Sendable {
            var name: String
            var headers: [String: String]
            var body: Data
            var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        }
        var requests: [Request] = []
        func add(_ request: Request) { requests.append(request) }
        func to(_ name: String) -> [Request] { requests.filter { $0.name == name } }
    }

    @Test(
        "Operator endpoints: added, pinged, every job's end signed with its own secret beside a callback; a rotation signs with both; a removed one gets nothing"
    )
    func endpoints() async throws {
        let log = Log()
        let port = Int.random(in: 12_000..<14_000)
        let router = Router()
        router.post("hook/{name}") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            await log.add(.init(name: context.parameters.get("name") ?? "", headers: headers, body: Data(body.readableBytesView)))
            return .ok
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        let server = Task { try await app.run() }
        defer { server.cancel() }
        let hooks = "http://127.0.0.1:\(port)/hook"
        let settings = [
            "WEBHOOK_SECRET": Self.secret, "WEBHOOK_RETRY_BASE_SECONDS": "1", "WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_ALLOWED_PORTS": "*",
        ]
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await LiveSystem.withRunningSystem(workers: 1, settings: settings, databaseURL: databaseURL) { system in
                func cli(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
                    try TestServices.moments(["webhooks", "endpoints"] + arguments, environment: system.environment)
                }
                let refused = try cli(["add", "ftp://example.com/x"])
                #expect(refused.status == 1 && refused.err.contains("http:// or https://"), "\(refused)")

                let added = try cli(["add", "\(hooks)/a", "--description", "analytics"])
                #expect(added.status == 0, "\(added.err)")
                let id = try #require(added.out.firstMatch(of: #/endpoint ([0-9a-f-]{36}) /#)?.output.1).description
                var secret = try #require(added.out.firstMatch(of: /secret (whsec_[0-9a-f]{64})/)?.output.1).description
                #expect(try cli(["list"]).out.contains(id))

                // A ping: signed with the endpoint's own secret, once.
                let ping = try cli(["ping", id])
                #expect(ping.status == 0 && ping.out.contains("delivered: HTTP 200"), "\(ping)")
                let pinged = try #require(await log.to("a").last)
                #expect(pinged.headers["moments-event"] == "ping" && pinged.json["endpoint_id"] as? String == id)
                #expect(Self.signatures(pinged) == 1 && Self.verify(pinged, secret: secret))

                // A job's end: to the endpoint (its secret) and to the job's callback_url (WEBHOOK_SECRET).
                let video = "file=@\(TestFootage.twentySeconds);type=video/mp4"
                let upload = "\(system.base)/api/v1/upload"
                let job = try #require(try CurlAPI.json(try curl(["-F", video, "-F", "callback_url=\(hooks)/cb", upload]).body)["job_id"] as? String)
                #expect(try curl(["-X", "DELETE", "\(system.base)/api/v1/jobs/\(job)"]).status == 200)
                #expect(
                    try await TestServices.eventually(timeout: .seconds(30)) {
                        let (callbacks, endpoint) = (await log.to("cb").count, await log.to("a").count)
                        return callbacks == 1 && endpoint == 2
                    })
                let announced = try #require(await log.to("a").last)
                #expect(
                    announced.headers["moments-event"] == "job.cancelled" && (announced.json["job"] as? [String: Any])?["job_id"] as? String == job)
                #expect(Self.verify(announced, secret: secret) && !Self.verify(announced, secret: Self.secret))
                let callback = try #require(await log.to("cb").first)
                #expect(Self.verify(callback, secret: Self.secret) && !Self.verify(callback, secret: secret))

                // Rotated: both secrets sign while the overlap lasts; with none, only the new one.
                let rotated = try cli(["rotate", id])
                let newer = try #require(rotated.out.firstMatch(of: /secret (whsec_[0-9a-f]{64})/)?.output.1).description
                #expect(newer != secret && rotated.out.contains("the old secret signs too until"))
                #expect(try cli(["ping", id]).status == 0)
                let overlapping = try #require(await log.to("a").last)
                #expect(Self.signatures(overlapping) == 2 && Self.verify(overlapping, secret: newer) && Self.verify(overlapping, secret: secret))
                secret = newer
                let again = try cli(["rotate", id, "--overlap-hours", "0"])
                let newest = try #require(again.out.firstMatch(of: /secret (whsec_[0-9a-f]{64})/)?.output.1).description
                #expect(try cli(["ping", id]).status == 0)
                let single = try #require(await log.to("a").last)
                #expect(Self.signatures(single) == 1 && Self.verify(single, secret: newest) && !Self.verify(single, secret: secret))

                // Removed: no more deliveries, and no ping.
                #expect(try cli(["remove", id]).status == 0)
                let (listed, all) = (try cli(["list"]).out, try cli(["list", "--all"]).out)
                #expect(!listed.contains(id) && all.contains("removed"), "\(listed)\n\(all)")
                let before = await log.to("a").count
                let later = try #require(
                    try CurlAPI.json(try curl(["-F", video, "-F", "callback_url=\(hooks)/cb", upload]).body)["job_id"] as? String)
                #expect(try curl(["-X", "DELETE", "\(system.base)/api/v1/jobs/\(later)"]).status == 200)
                #expect(try await TestServices.eventually(timeout: .seconds(30)) { await log.to("cb").count == 2 })
                #expect(await log.to("a").count == before, "a removed endpoint gets nothing")
                #expect(try cli(["ping", id]).status == 1)
                let rows = try await store.webhookDeliveries(job: UUID(uuidString: later)!)
                #expect(rows.count == 1 && rows[0].url.hasSuffix("/cb"), "\(rows)")
            }
        }
    }

    /// How many `v1` signatures a request carries.
    static func signatures(_ request: Log.Request) -> Int {
        (request.headers["moments-signature"] ?? "").split(separator: ",").filter { $0.hasPrefix("v1=") }.count
    }

    /// Whether one of the request's `v1` signatures is the HMAC of "<t>.<body>" under `secret`.
    static func verify(_ request: Log.Request, secret: String) -> Bool {
        verify(request.headers["moments-signature"] ?? "", body: request.body, secret: secret)
    }

    /// What a receiver does: recompute the HMAC of "<t>.<body>" and compare it with each `v1`.
    static func verify(_ header: String, body: Data, secret: String = Self.secret) -> Bool {
        let pieces = header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        guard let t = pieces.first(where: { $0.first == "t" })?.last else { return false }
        var signed = Data("\(t).".utf8)
        signed.append(body)
        let mac = Hex.lowercase(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8))))
        return pieces.contains { $0.count == 2 && $0[0] == "v1" && $0[1] == mac }
    }
}
