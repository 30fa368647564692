import Foundation
import MomentsSupport
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// `Idempotency-Key` on submissions, through the API in this process listening on a port of its
/// own: a client whose connection dropped after the server made the job sends the same request
/// again and gets that job, and the quota counts it once. Alone: its uploads (footage probed and
/// stored in this process) beside the lease tests made their renewals late (3 runs in 4).
@Suite("Idempotent submissions", .alone)
struct IdempotencyTests {
    @Test("A retry after a dropped answer returns the same job and spends one quota slot; another request under the key is 422")
    func retryAfterDroppedConnection() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true", "FREE_MONTHLY_HIGHLIGHTS": "2"], live: true) { api in
            let store = api.store
            let port = try #require(api.client.port)
            let base = "http://127.0.0.1:\(port)"
            let auth = try await CurlAPI.deviceOffPool(base)
            // The first upload reaches the API, which makes the job; its answer never reaches the client.
            let proxy = try FaultProxy(upstreamPort: port) { method, path, earlier in
                method == "POST" && path == "/api/v1/upload" && !earlier.contains { $0.fault == .dropResponse } ? .dropResponse : .pass
            }
            defer { proxy.close() }
            let viaProxy = "http://127.0.0.1:\(proxy.port)"
            func upload(key: String?, duration: Int = 5, through host: String) async throws -> Reply {
                try await Self.exchange(
                    auth + (key.map { ["-H", "Idempotency-Key: \($0)"] } ?? []) + [
                        "-H", "Expect:", "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=\(duration)",
                        "-F", "quality=low", "\(host)/api/v1/upload",
                    ])
            }

            let key = UUID().uuidString
            let dropped = try await upload(key: key, through: viaProxy)
            #expect(dropped.status == 0, "the client heard nothing: \(dropped.status) \(dropped.body)")
            #expect(proxy.exchanges.first?.fault == .dropResponse)
            #expect(try await Self.jobCount(store) == 1, "the server made the job")

            let retried = try await upload(key: key, through: viaProxy)
            #expect(retried.status == 200, "\(retried.body)")
            #expect(retried.headers["idempotent-replayed"] == "true")
            let id = try #require(try CurlAPI.json(retried.body)["job_id"] as? String)
            #expect(try await Self.jobIDs(store) == [id], "one job, the one the retry names")
            let owner = try #require(try await store.job(UUID(uuidString: id)!)?.owner)
            #expect(try await store.monthlyUsage(owner: owner).used == 1, "one quota slot")
            #expect(try await upload(key: key, through: base).body == retried.body, "the same answer again, byte for byte")

            let reused = try CurlAPI.error(
                try await curlOffPool(
                    auth + [
                        "-H", "Idempotency-Key: \(key)", "-F",
                        "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=6",
                        "\(base)/api/v1/upload",
                    ]))
            #expect(reused.status == 422 && reused.code == "idempotency_key_reused", "\(reused)")
            // The same settings and file name with another file (its SHA-256 is part of the request) is another request too.
            let sameName = URL(fileURLWithPath: TestFootage.twentySeconds).lastPathComponent
            let otherFile = try CurlAPI.error(
                try await curlOffPool(
                    auth + [
                        "-H", "Expect:", "-H", "Idempotency-Key: \(key)", "-F",
                        "file=@\(TestFootage.sixSeconds);type=video/mp4;filename=\(sameName)", "-F", "target_duration=5",
                        "-F", "quality=low", "\(base)/api/v1/upload",
                    ]))
            #expect(otherFile.status == 422 && otherFile.code == "idempotency_key_reused", "\(otherFile)")

            // The second highlight takes the last slot; its retry is not refused for quota, a third upload is.
            let second = UUID().uuidString
            let made = try await upload(key: second, through: base)
            #expect(made.status == 200 && made.headers["idempotent-replayed"] == nil)
            let full = try CurlAPI.error(
                try await curlOffPool(
                    auth + [
                        "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4",
                        "\(base)/api/v1/upload",
                    ]))
            #expect(full.status == 402 && full.code == "quota_exceeded")
            let again = try await upload(key: second, through: base)
            #expect(again.status == 200 && again.body == made.body, "\(again.body)")
            #expect(try await store.monthlyUsage(owner: owner).used == 2)

            for bad in ["has space", String(repeating: "k", count: 256)] {
                let refused = try CurlAPI.error(
                    try await curlOffPool(
                        auth + [
                            "-H", "Idempotency-Key: \(bad)", "-F",
                            "file=@\(TestFootage.twentySeconds);type=video/mp4", "\(base)/api/v1/upload",
                        ]))
                #expect(refused.status == 400 && refused.code == "invalid_idempotency_key", "\(refused)")
            }
        }
    }

    @Test("A direct-upload reservation repeated under its key names the same job with a fresh URL; another body is 422")
    func reservation() async throws {
        try await InProcessAPI.run(presigning: true, live: true) { api in
            let base = "http://127.0.0.1:\(try #require(api.client.port))"
            func reserve(_ body: String, key: String) async throws -> Reply {
                try await Self.exchange([
                    "-X", "POST", "-H", "Content-Type: application/json", "-H", "Idempotency-Key: \(key)", "-d", body,
                    "\(base)/api/v1/uploads",
                ])
            }
            let key = UUID().uuidString
            let body = #"{"filename": "big.mov", "target_duration": 6, "size_bytes": 1000}"#
            let first = try await reserve(body, key: key)
            let second = try await reserve(body, key: key)
            #expect(first.status == 200 && second.status == 200, "\(first.body) \(second.body)")
            let firstID = try CurlAPI.json(first.body)["job_id"] as? String
            let secondID = try CurlAPI.json(second.body)["job_id"] as? String
            #expect(firstID != nil && firstID == secondID)
            #expect(first.headers["idempotent-replayed"] == nil && second.headers["idempotent-replayed"] == "true")
            let other = try CurlAPI.error(
                try await curlOffPool([
                    "-X", "POST", "-H", "Content-Type: application/json", "-H", "Idempotency-Key: \(key)",
                    "-d", #"{"filename": "other.mov"}"#, "\(base)/api/v1/uploads",
                ]))
            #expect(other.status == 422 && other.code == "idempotency_key_reused")
            // A key used for an upload reservation cannot stand for a multipart upload either.
            let crossed = try CurlAPI.error(
                try await curlOffPool([
                    "-H", "Idempotency-Key: \(key)", "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4",
                    "\(base)/api/v1/upload",
                ]))
            #expect(crossed.status == 422 && crossed.code == "idempotency_key_reused")
        }
    }

    /// `Reply`, off the cooperative pool (the API that answers runs on that pool in this process).
    static func exchange(_ arguments: [String]) async throws -> Reply {
        try await BlockingWork.run { try Reply(arguments) }
    }

    /// A curl exchange with its response headers (names lowercased).
    struct Reply {
        var status: Int
        var body: String
        var headers: [String: String]

        init(_ arguments: [String]) throws {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-headers-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            (status, body) = try curl(["-D", file.path] + arguments)
            headers = [:]
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
    }

    static func jobCount(_ store: JobStore) async throws -> Int { try await jobIDs(store).count }

    static func jobIDs(_ store: JobStore) async throws -> [String] {
        var ids: [String] = []
        for try await id in try await store.client.query("SELECT id FROM jobs ORDER BY created_at", logger: TestServices.logger).decode(UUID.self) {
            ids.append(id.uuidString.lowercased())
        }
        return ids
    }
}
