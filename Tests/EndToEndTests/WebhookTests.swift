import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
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

    /// What a receiver does: recompute the HMAC of "<t>.<body>" and compare.
    static func verify(_ header: String, body: Data) -> Bool {
        let parts = Dictionary(
            uniqueKeysWithValues: header.split(separator: ",").compactMap { piece -> (String, String)? in
                let pair = piece.split(separator: "=", maxSplits: 1)
                return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
            })
        guard let t = parts["t"], let v1 = parts["v1"] else { return false }
        var signed = Data("\(t).".utf8)
        signed.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined() == v1
    }
}
