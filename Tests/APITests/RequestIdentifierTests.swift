import Foundation
import HTTPTypes
import ServiceTestSupport
import Testing

/// `X-Request-Id`: the client's when well-formed, else a new one, on every answer and in every
/// error's body (in process; the fast status poll in `StatusPollHandlerTests`, logs and spans in
/// `TracingEndToEndTests`).
@Suite("Request ids (in process)", .quiet)
struct RequestIdentifierTests {
    static let name = HTTPField.Name("X-Request-Id")!

    static func sending(_ id: String) -> HTTPFields { [name: id] }

    static func isMade(_ id: String?) -> Bool { id?.wholeMatch(of: /[0-9a-f]{32}/) != nil }

    @Test("A well-formed client id comes back on answers and errors, and in an error's body")
    func clientID() async throws {
        try await InProcessAPI.run { api in
            for id in [
                "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "01JDQ8ZK7T5XG4V2N9R6M3B1C0", "app:ios/7.2+build=41", "a", String(repeating: "z", count: 128),
            ] {
                let ok = try await api.get("/api/v1/upload/formats", headers: Self.sending(id))
                #expect(ok.status == 200 && ok.header("X-Request-Id") == id, "\(id): \(ok.status)")
                let missing = try await api.get("/api/v1/jobs/\(UUID().uuidString)/status", headers: Self.sending(id))
                #expect(missing.status == 404 && missing.header("X-Request-Id") == id)
                #expect((try missing.json()["error"] as? [String: Any])?["request_id"] as? String == id, "\(missing.text)")
                let nowhere = try await api.get("/nowhere", headers: Self.sending(id))
                #expect(nowhere.status == 404 && nowhere.header("X-Request-Id") == id)
            }
        }
    }

    @Test("A missing or malformed id is replaced by a new one, 32 hex digits, new for every request")
    func replaced() async throws {
        try await InProcessAPI.run { api in
            var made: [String] = []
            let hostile = [
                "", "two words", "quote\"d", "semi;colon", "back\\slash", "café", "{\"json\": 1}", String(repeating: "z", count: 129),
                "<script>", "line%0Abreak",
            ]
            for id in hostile {
                let reply = try await api.get("/api/v1/upload/formats", headers: id.isEmpty ? [:] : Self.sending(id))
                #expect(
                    reply.status == 200 && Self.isMade(reply.header("X-Request-Id")), "\(id): \(String(describing: reply.header("X-Request-Id")))")
                made += reply.header("X-Request-Id").map { [$0] } ?? []
            }
            var twice = HTTPFields()
            twice.append(HTTPField(name: Self.name, value: "first"))
            twice.append(HTTPField(name: Self.name, value: "second"))
            let doubled = try await api.get("/api/v1/upload/formats", headers: twice)
            #expect(Self.isMade(doubled.header("X-Request-Id")), "two ids are none: \(doubled.headers)")
            #expect(Set(made).count == made.count, "\(made)")
        }
    }
}
