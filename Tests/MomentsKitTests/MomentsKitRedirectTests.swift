import Foundation
import HTTPTypes
import Hummingbird
import MomentsContract
import MomentsKit
import ServiceTestSupport
import Synchronization
import Testing

/// What MomentsKit sends where, checked with a small HTTP server that plays the API and storage.
/// Quiet: the server runs in this process, and its start waits for the cooperative pool, which a
/// heavy suite's synchronous tests can hold for longer than the 10 s the tests give it (a CI run
/// on 2026-11-25 saw it not answer for 10 s, then serve the uploads).
@Suite("MomentsKit on the wire", .quiet)
struct MomentsKitRedirectTests {
    actor Seen {
        var authorization: [String: String?] = [:]
        func record(_ path: String, _ value: String?) { authorization[path] = value }
    }

    @Test("A download follows the redirect to storage without sending the device token there; 503s are retried for reads")
    func redirectDropsTheToken() async throws {
        let seen = Seen()
        let port = Int.random(in: 9_100..<9_900)
        let job = UUID()
        let failures = Mutex(1)
        let router = Router()
        router.get("api/v1/jobs/{id}/download") { request, _ -> Response in
            await seen.record("api", request.headers[.authorization])
            // Another host name for the same server, as a storage URL is another host.
            return Response.redirect(to: "http://localhost:\(port)/bucket/highlight.mp4?X-Amz-Signature=abc", type: .found)
        }
        router.get("bucket/highlight.mp4") { request, _ -> Response in
            await seen.record("storage", request.headers[.authorization])
            return Response(status: .ok, headers: [.contentType: "video/mp4"], body: .init(byteBuffer: ByteBuffer(string: "not really an mp4")))
        }
        router.get("api/v1/upload/formats") { _, _ -> Response in
            // One 503 first: a read is retried.
            if failures.withLock({ count in
                defer { count -= 1 }; return count > 0
            }) {
                return Response(
                    status: .serviceUnavailable, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"error": {"code": "service_unavailable", "message": "Try again."}}"#)))
            }
            let formats = UploadFormats(
                extensions: ["mov"], containers: ["mov"], maxSizeBytes: 1, maxDurationSeconds: 1,
                targetDuration: .init(min: 5, max: 120, default: 30), qualities: ["high"], defaultQuality: "high")
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try MomentsJSON.encoder.encode(formats))))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        let server = Task { try await app.run() }
        defer { server.cancel() }
        let client = MomentsClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, token: "mdt_secret-device-token")
        let ready = try await TestServices.eventually(timeout: .seconds(10)) { (try? await client.formats()) != nil }
        #expect(ready, "after one 503, the retried read succeeded")
        #expect(failures.withLock { $0 } < 0)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-redirect-\(job).mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        try await client.download(job, to: file)
        #expect(try String(contentsOf: file, encoding: .utf8) == "not really an mp4")
        let authorization = await seen.authorization
        #expect(authorization["api"] == .some("Bearer mdt_secret-device-token"))
        #expect(authorization["storage"] == .some(nil), "the token never reaches storage: \(authorization)")
    }

    @Test("An upload that meets a 503 is sent again with the same Idempotency-Key, and a new upload gets a new key")
    func uploadsRetryUnderOneKey() async throws {
        let keys = Mutex<[String]>([])
        let port = Int.random(in: 9_100..<9_900)
        let job = UUID()
        let router = Router()
        router.post("api/v1/upload") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            let seen = keys.withLock { keys in
                keys.append(request.headers[HTTPField.Name("Idempotency-Key")!] ?? "")
                return keys.count
            }
            // The first try of the first upload fails as a server that lost its database does.
            if seen == 1 {
                return Response(
                    status: .serviceUnavailable, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"error": {"code": "service_unavailable", "message": "Try again."}}"#)))
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try MomentsJSON.encoder.encode(UploadAccepted(jobID: job, estimatedTime: 7)))))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        let server = Task { try await app.run() }
        defer { server.cancel() }
        let client = MomentsClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-idempotent-\(job).mov")
        try Data(repeating: 7, count: 4096).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        // Long enough for a server starting on a machine busy with the whole suite.
        let up = try await TestServices.eventually(timeout: .seconds(60)) { (try? curl(["http://127.0.0.1:\(port)/"]).status) ?? 0 != 0 }
        #expect(up)

        let accepted = try await client.upload(file: file, targetDuration: 10)
        #expect(accepted.jobID == job)
        _ = try await client.upload(file: file, targetDuration: 10)
        let sent = keys.withLock { $0 }
        #expect(sent.count == 3, "one retry: \(sent)")
        #expect(!sent[0].isEmpty && sent[0] == sent[1], "the retry repeats its key: \(sent)")
        #expect(sent[2] != sent[0], "a new upload, a new key")
    }
}
