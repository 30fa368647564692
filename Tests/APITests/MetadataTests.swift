import Foundation
import HTTPTypes
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// `metadata` (API 1.2): the app's own strings, taken on both ways in and shown wherever the job
/// is; in process over real PostgreSQL, on a port of its own so the status poll is the channel
/// handler's. Webhooks and Server-Sent Events carry it too (`WebhookTests`, `MomentsKitEndToEndTests`).
@Suite("Job metadata (in process)", .quiet)
struct MetadataTests {
    static let album = ["album": "Summer 2026", "user": "42/ü", "quote": "say \"cheese\"\n"]

    @Test("Kept from a multipart upload and a direct upload; shown by the status poll, the details and the list; queried in SQL")
    func keptAndShown() async throws {
        try await InProcessAPI.run(["AUTH_REQUIRED": "true"], presigning: true, live: true) { api in
            let device = try await api.device()
            let sent = try await api.upload(
                try InProcessAPI.footage, fields: ["target_duration": "8", "metadata": JobMetadata.json(Self.album)], headers: device)
            #expect(sent.status == 200, "\(sent.text)")
            let uploaded = try #require(UUID(uuidString: try sent.json()["job_id"] as? String ?? ""))

            var reserve = try await api.post("/api/v1/uploads", json: ["filename": "big.mov", "metadata": ["draft": "7"]], headers: device)
            #expect(reserve.status == 200, "\(reserve.text)")
            let direct = try #require(UUID(uuidString: try reserve.json()["job_id"] as? String ?? ""))
            let url = try #require(URL(string: try reserve.json()["upload_url"] as? String ?? ""))
            _ = try await api.storage.put(
                key: String(url.path.dropFirst()), from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
            #expect(try await api.send(.post, "/api/v1/jobs/\(direct)/start", headers: device).status == 200)

            for (id, expected) in [(uploaded, Self.album), (direct, ["draft": "7"])] {
                #expect(try await api.store.job(id)?.metadata == expected)
                let status = try await api.get("/api/v1/jobs/\(id)/status", headers: device)
                #expect(try status.json()["metadata"] as? [String: String] == expected, "\(status.text)")
                let details = try await api.get("/api/v1/jobs/\(id)", headers: device).json()
                #expect(details["metadata"] as? [String: String] == expected, "\(details)")
            }
            let list = try await api.get("/api/v1/jobs", headers: device).json()
            let listed = (list["jobs"] as? [[String: Any]] ?? []).map { $0["metadata"] as? [String: String] }
            #expect(listed.count == 2 && Set(listed.compactMap { $0 }) == [Self.album, ["draft": "7"]], "\(list)")
            // Operators find a job by the app's own key.
            var found: [UUID] = []
            let rows = try await api.store.client.query("SELECT id FROM jobs WHERE metadata->>'album' = 'Summer 2026'")
            for try await id in rows.decode(UUID.self) { found.append(id) }
            #expect(found == [uploaded])

            // Without metadata the answers are as before 1.2: no key at all.
            reserve = try await api.post("/api/v1/uploads", json: ["filename": "plain.mov"], headers: device)
            let plain = try await api.upload(try InProcessAPI.footage, fields: [:], headers: device)
            let plainID = try #require(try plain.json()["job_id"] as? String)
            #expect(!(try await api.get("/api/v1/jobs/\(plainID)/status", headers: device).text.contains("metadata")))
            #expect(!(try await api.get("/api/v1/jobs/\(plainID)", headers: device).text.contains("metadata")))
        }
    }

    @Test("Refused with 422 invalid_metadata on both ways in, and nothing is created: not an object, not strings, long keys, over 1 KB, U+0000")
    func refused() async throws {
        let unlimited = ["AUTH_REQUIRED": "true", "RATE_LIMIT_UPLOADS_PER_OWNER": "1000", "RATE_LIMIT_UPLOADS_PER_IP": "1000"]
        try await InProcessAPI.run(unlimited, presigning: true) { api in
            let device = try await api.device()
            // The compact JSON of {"note": "aaa…"} is the note's length plus 11 bytes.
            let longest = String(repeating: "a", count: JobMetadata.maxBytes - 11)
            let bad: [(text: String, why: String)] = [
                ("not json", "text"), ("[\"a\"]", "an array"), ("\"a\"", "a string"), ("{\"n\": 5}", "a number"),
                ("{\"n\": {\"a\": \"b\"}}", "an object in it"), ("{\"n\": null}", "a null"), ("{\"\": \"a\"}", "an empty key"),
                ("{\"\(String(repeating: "k", count: 41))\": \"a\"}", "a key of 41 characters"),
                ("{\"note\": \"\(longest)a\"}", "1,025 bytes"), ("{\"n\": \"a\\u0000b\"}", "U+0000"),
            ]
            for (text, why) in bad {
                let form = try await api.upload(try InProcessAPI.footage, fields: ["metadata": text], headers: device).error()
                #expect(form.status == 422 && form.code == "invalid_metadata", "multipart, \(why): \(form)")
                #expect(form.message.hasPrefix(JobMetadata.rule), "\(form.message)")
                // In a JSON body: the same value (text that is no JSON goes as a string).
                let value = (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) ?? text
                let json = try await api.post("/api/v1/uploads", json: ["filename": "a.mov", "metadata": value], headers: device).error()
                #expect(json.status == 422 && json.code == "invalid_metadata", "direct, \(why): \(json)")
                #expect(json.message.hasPrefix(JobMetadata.rule), "\(json.message)")
            }
            let jobs = try await api.get("/api/v1/jobs", headers: device).json()["jobs"] as? [Any]
            #expect(jobs?.isEmpty == true, "nothing was created")

            // Exactly 1 KB is taken; an empty object is the same as none.
            let full = try await api.upload(
                try InProcessAPI.footage, fields: ["metadata": "{\"note\":\"\(longest)\"}"], headers: device)
            #expect(full.status == 200, "\(full.text)")
            let empty = try await api.upload(try InProcessAPI.footage, fields: ["metadata": " {} "], headers: device)
            let id = try #require(UUID(uuidString: try empty.json()["job_id"] as? String ?? ""))
            #expect(try await api.store.job(id)?.metadata == nil)
        }
    }

    @Test("The rules over 3,000 generated objects: taken exactly when keys are 1–40 characters, no U+0000, and the JSON fits 1 KB")
    func rules() throws {
        var random = StatusJSONTests.Generator(state: 29)
        let pieces = ["a", "album", "ü", "e\u{301}", "😀", "👩‍👩‍👧", "\"", "\\", "/", "\n", "\u{0}", "日本", String(repeating: "x", count: 30)]
        for index in 0..<3_000 {
            var values: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let key = (0..<Int.random(in: 0...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
                values[key] = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            }
            let keysFit = values.keys.allSatisfy { (1...40).contains($0.unicodeScalars.count) }
            let noNul = !(Array(values.keys) + Array(values.values)).contains { $0.unicodeScalars.contains("\0") }
            let bytes = try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys, .withoutEscapingSlashes]).count
            let taken = try? JobMetadata.check(values)
            let expected = values.isEmpty || (keysFit && noNul && bytes <= JobMetadata.maxBytes)
            #expect((taken != nil || values.isEmpty) == expected, "object \(index): \(values.count) keys, \(bytes) bytes")
            if let taken {
                #expect(try JobMetadata.parse(JobMetadata.json(taken)) == taken, "round trip \(index)")
            }
        }
    }
}
