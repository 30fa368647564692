import Crypto
import Foundation
import MomentsKit
import MomentsModel
import MomentsSupport
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// Push notifications (API 1.2) through real processes: `moments api` and a worker send to
/// `scripts/apns-test-server`, an HTTP/2 TLS server of the test's own that checks each request as
/// APNs does (the ES256 JWT's signature with the public key, the apns-* headers, the payload) and
/// answers as APNs would, by the token's first digit.
@Suite("Push notifications (real processes and a test APNs)", .serialized, .heavy)
struct PushTests {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let topic = "app.moments.test"
    static let adminToken = "push-test-admin-token-0123456789"

    /// A token whose first digit tells the test server how to answer.
    static func token(_ first: Character) -> String { String(first) + String(repeating: "0", count: 63) }

    @Test(
        "Each job's end is pushed: JWT reused, headers and payload as APNs wants; 410 and BadDeviceToken remove the token, 429, 503 and ExpiredProviderToken retry, others recorded"
    )
    func pushes() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The team's .p8 key (PKCS#8 PEM, as Apple gives it) and its public half for the server.
        let key = P256.Signing.PrivateKey()
        let p8 = folder.appendingPathComponent("AuthKey.p8"), publicKey = folder.appendingPathComponent("public.pem")
        try key.pemRepresentation.write(to: p8, atomically: true, encoding: .utf8)
        try key.publicKey.pemRepresentation.write(to: publicKey, atomically: true, encoding: .utf8)
        let cert = folder.appendingPathComponent("cert.pem"), certKey = folder.appendingPathComponent("cert-key.pem")
        let made = try captured(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                "-keyout", certKey.path, "-out", cert.path, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ])
        try #require(made.status == 0, "\(String(decoding: made.errors, as: UTF8.self))")
        let log = folder.appendingPathComponent("apns.jsonl"), output = folder.appendingPathComponent("apns.out")
        let port = Int.random(in: 14_000..<16_000)
        let server = try TestServices.spawn(
            try TestServices.environment("MOMENTS_PYTHON"),
            [
                TestServices.repository.appendingPathComponent("scripts/apns-test-server").path, "--port", "\(port)",
                "--cert", cert.path, "--key", certKey.path, "--public-key", publicKey.path, "--key-id", Self.keyID,
                "--team-id", Self.teamID, "--topic", Self.topic, "--log", log.path,
            ], output: output.path, errors: output.path)
        defer {
            kill(server, SIGTERM)
            TestServices.wait(for: server)
        }
        let listening = try await TestServices.eventually(timeout: .seconds(20)) {
            ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("listening")
        }
        try #require(listening, "the test APNs did not start: \((try? String(contentsOf: output, encoding: .utf8)) ?? "")")

        let apns = "https://127.0.0.1:\(port)"
        let settings = [
            "AUTH_REQUIRED": "true", "APNS_KEY_FILE": p8.path, "APNS_KEY_ID": Self.keyID, "APNS_TEAM_ID": Self.teamID,
            "APNS_TOPIC": Self.topic, "APNS_PRODUCTION_URL": apns, "APNS_SANDBOX_URL": apns, "APNS_CA_FILE": cert.path,
            "PUSH_RETRY_BASE_SECONDS": "1", "ADMIN_TOKEN": Self.adminToken,
        ]
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await LiveSystem.withRunningSystem(workers: 1, settings: settings, databaseURL: databaseURL) { system in
                // Refusals first.
                let device = try CurlAPI.device(system.base)
                let push = "\(system.base)/api/v1/devices/me/push"
                func put(_ json: String) throws -> (status: Int, body: String) {
                    try curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", json] + device + [push])
                }
                for (json, code) in [
                    (#"{"token": "xyz", "environment": "production"}"#, "invalid_push_token"),
                    (#"{"token": "\#(String(repeating: "a", count: 63))", "environment": "production"}"#, "invalid_push_token"),
                    (#"{"token": "\#(Self.token("a"))", "environment": "staging"}"#, "invalid_push_environment"),
                ] {
                    let refused = try CurlAPI.error(try put(json))
                    #expect(refused.status == 422 && refused.code == code, "\(json): \(refused)")
                }
                #expect(try put(#"{"token": "\#(Self.token("a"))", "environment": "sandbox"}"#).status == 200)
                #expect(try curl(["-X", "DELETE"] + device + [push]).status == 204)

                // A real job through MomentsKit, on a device whose pushes APNs takes.
                var client = MomentsClient(baseURL: URL(string: system.base)!)
                client.token = try await client.registerDevice(name: "Ann").token
                let registered = try await client.registerPush(
                    deviceToken: Data([0xA0] + [UInt8](repeating: 0, count: 31)), environment: .sandbox)
                #expect(registered.token == "a0" + String(repeating: "0", count: 62) && registered.registeredAt != nil)
                let done = try await client.upload(
                    file: URL(fileURLWithPath: TestFootage.twentySeconds), targetDuration: 5, quality: .low, metadata: ["album": "Ann"]
                ).jobID

                // Devices whose tokens APNs answers otherwise; their jobs fail in the database (the
                // trigger writes the push in the same statement, as when a worker fails a job).
                var owners: [Character: (device: UUID, job: UUID)] = [:]
                for first: Character in ["b", "c", "d", "e", "f", "1"] {
                    let hash = Hex.lowercase(SHA256.hash(data: Data(UUID().uuidString.utf8)))
                    let other = try await store.registerDevice(tokenSHA256: hash, name: "\(first)")
                    _ = try await store.setPushToken(device: other.id, token: Self.token(first), environment: .production)
                    let job = try await store.create(NewJob(owner: other.owner, sourceKey: "sources/\(first).mp4"))
                    owners[first] = (other.id, job.id)
                    try await store.client.query(
                        "UPDATE jobs SET status = 'failed', error_code = 'corrupt_media', completed_at = now() WHERE id = \(job.id)",
                        logger: TestServices.logger)
                }

                let ended = try await TestServices.eventually(timeout: .seconds(120)) {
                    var finished = 0
                    for id in [done] + owners.values.map(\.job) {
                        if try await store.pushDeliveries(job: id).contains(where: { $0.state != "waiting" }) { finished += 1 }
                    }
                    return finished == 7
                }
                let requests = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap {
                    try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                #expect(ended, "\(requests.count) requests: \(requests.map { "\($0["device"] ?? "") \($0["status"] ?? "")" })")
                #expect(requests.allSatisfy { $0["valid"] as? Bool == true }, "every request as APNs wants it: \(requests)")

                // The completed job's push: its payload, to the sandbox token.
                let ann = try #require(requests.first { ($0["device"] as? String)?.hasPrefix("a0") == true })
                let payload = try #require(
                    try JSONSerialization.jsonObject(with: Data((ann["body"] as? String ?? "").utf8)) as? [String: Any])
                let aps = try #require(payload["aps"] as? [String: Any])
                let alert = try #require(aps["alert"] as? [String: Any])
                #expect(alert["loc-key"] as? String == "MOMENTS_READY_BODY" && alert["title-loc-key"] as? String == "MOMENTS_READY_TITLE")
                #expect(aps["thread-id"] as? String == "job-\(done.uuidString.lowercased())")
                #expect(payload["job_id"] as? String == done.uuidString.lowercased() && payload["status"] as? String == "completed")
                #expect(payload["metadata"] as? [String: String] == ["album": "Ann"])
                #expect(try await store.pushDeliveries(job: done).map(\.state) == ["delivered"])

                func deliveries(_ first: Character) async throws -> [PushDeliveryRecord] {
                    try await store.pushDeliveries(job: owners[first]!.job)
                }
                // 410 Unregistered and 400 BadDeviceToken: given up, the token removed.
                for (first, reason) in [("b", "Unregistered"), ("c", "BadDeviceToken")] as [(Character, String)] {
                    let pushes = try await deliveries(first)
                    #expect(pushes.count == 1 && pushes[0].state == "given up" && pushes[0].lastReason == reason, "\(pushes)")
                    #expect(try await store.pushToken(device: owners[first]!.device) == nil, "\(first)'s token removed")
                }
                // 429 and 503: tried again, then delivered; the token kept.
                for first: Character in ["d", "1"] {
                    let retried = try await deliveries(first)
                    #expect(retried.first?.state == "delivered" && retried.first?.attempts == 2, "\(first): \(retried)")
                    #expect(try await store.pushToken(device: owners[first]!.device) != nil)
                }
                // ExpiredProviderToken: a new JWT at once, then delivered.
                let expired = try await deliveries("e")
                #expect(expired.first?.state == "delivered" && expired.first?.attempts == 2, "\(expired)")
                let jwts = requests.filter { ($0["device"] as? String)?.first == "e" }.compactMap {
                    ($0["jwt"] as? [String: Any])?["token"] as? String
                }
                #expect(jwts.count == 2 && jwts[0] != jwts[1], "the second attempt carried a new JWT")
                // Anything else: given up with APNs' reason, for the console.
                let tooLarge = try await deliveries("f")
                #expect(tooLarge.first?.state == "given up" && tooLarge.first?.lastReason == "PayloadTooLarge" && tooLarge.first?.lastStatus == 413)
                // ... and on the console's job page.
                let jar = folder.appendingPathComponent("console.cookies").path
                #expect(try curl(["-c", jar, "-d", "token=\(Self.adminToken)&name=Ann", "\(system.base)/admin/login"]).status == 303)
                let page = try curl(["-b", jar, "\(system.base)/admin/jobs/\(owners["f"]!.job.uuidString.lowercased())"])
                #expect(page.status == 200 && page.body.contains("PayloadTooLarge") && page.body.contains("id=\"pushes\""))
                // Signed once, not per push: every request up to the one APNs answered
                // ExpiredProviderToken carries the same JWT, and all of them carry two JWTs in all
                // (the first, and the one made on that answer).
                let tokens = requests.map { ($0["jwt"] as? [String: Any])?["token"] as? String }
                let expiredAt = requests.firstIndex { ($0["device"] as? String)?.first == "e" } ?? requests.endIndex
                #expect(Set(tokens[...min(expiredAt, tokens.count - 1)]).count == 1, "requests before the refresh carried one JWT: \(tokens)")
                #expect(tokens.count == 10 && !tokens.contains(nil) && Set(tokens).count == 2, "10 requests, two JWTs: \(tokens)")
            }
        }
    }
}
