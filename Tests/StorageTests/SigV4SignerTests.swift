import Crypto
import Foundation
import MomentsSupport
import Testing

@testable import Storage

/// AWS's official SigV4 vectors (`../shared/sigv4-test-suite`): every case, header and presigned.
@Suite("SigV4 signer")
struct SigV4SignerTests {
    static let suite = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/sigv4-test-suite")

    static var cases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: suite.path)) ?? [])
            .filter { FileManager.default.fileExists(atPath: suite.appendingPathComponent("\($0)/request.txt").path) }
            .sorted()
    }

    struct Case {
        var signer: SigV4Signer
        var request: SigV4Request
        var date: Date
        var expires: Int
        var signBody: Bool

        init(_ name: String) throws {
            let folder = SigV4SignerTests.suite.appendingPathComponent(name)
            let context = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("context.json"))) as! [String: Any]
            let credentials = context["credentials"] as! [String: String]
            signer = SigV4Signer(
                credentials: SigV4Credentials(
                    accessKeyID: credentials["access_key_id"]!, secretAccessKey: credentials["secret_access_key"]!,
                    sessionToken: credentials["token"]),
                region: context["region"] as! String, service: context["service"] as! String,
                normalizePath: context["normalize"] as? Bool ?? true,
                omitSessionTokenFromSignature: context["omit_session_token"] as? Bool ?? false)
            date = ISO8601DateFormatter().date(from: context["timestamp"] as! String)!
            expires = context["expiration_in_seconds"] as? Int ?? 3600
            signBody = context["sign_body"] as? Bool ?? false
            request = try Self.parse(String(decoding: Data(contentsOf: folder.appendingPathComponent("request.txt")), as: UTF8.self))
        }

        /// `METHOD TARGET HTTP/1.1`, header lines (continuations start with white space), blank line, body.
        static func parse(_ text: String) throws -> SigV4Request {
            let (head, body): (Substring, Substring) = {
                if let range = text.range(of: "\n\n") { return (text[..<range.lowerBound], text[range.upperBound...]) }
                return (Substring(text), "")
            }()
            var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let requestLine = lines.removeFirst()
            let method = String(requestLine.prefix { $0 != " " })
            let target = String(requestLine.dropFirst(method.count + 1).dropLast(" HTTP/1.1".count))
            var headers: [(name: String, value: String)] = []
            for line in lines where !line.isEmpty {
                if line.first == " " || line.first == "\t", !headers.isEmpty {
                    headers[headers.count - 1].value += " " + line.trimmingCharacters(in: .whitespaces)
                } else if let colon = line.firstIndex(of: ":") {
                    headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
                }
            }
            let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
            let path = parts[0], queryString = parts.count > 1 ? parts[1] : nil
            let query =
                queryString.map { q in
                    q.split(separator: "&").map { pair -> (name: String, value: String) in
                        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                        return (parts[0].removingPercentEncoding ?? parts[0], parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : "")
                    }
                } ?? []
            let hash = Hex.lowercase(SHA256.hash(data: Data(body.utf8)))
            return SigV4Request(method: method, path: path, query: query, headers: headers, payloadHash: hash)
        }
    }

    func expected(_ name: String, _ file: String) throws -> String {
        String(decoding: try Data(contentsOf: Self.suite.appendingPathComponent("\(name)/\(file)")), as: UTF8.self)
    }

    /// Canonical request, string to sign and signature, each exactly as the suite has them for `mode`.
    func expectMatches(_ result: SigV4Signer.Signature, _ name: String, mode: String) throws {
        #expect(result.canonicalRequest == (try expected(name, "\(mode)-canonical-request.txt")))
        #expect(result.stringToSign == (try expected(name, "\(mode)-string-to-sign.txt")))
        #expect(result.signature == (try expected(name, "\(mode)-signature.txt")).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("the vectors are there") func suitePresent() {
        #expect(Self.cases.count >= 30, "expected the AWS suite at \(Self.suite.path)")
    }

    @Test("header signing", arguments: cases)
    func header(name: String) throws {
        let c = try Case(name)
        let result = c.signer.signHeaders(c.request, date: c.date, includeContentHashHeader: c.signBody)
        try expectMatches(result, name, mode: "header")
        let authorization = try #require(result.additions.first { $0.name == "Authorization" }?.value)
        #expect((try expected(name, "header-signed-request.txt")).contains("Authorization:\(authorization)"))
    }

    @Test("presigned URLs", arguments: cases)
    func query(name: String) throws {
        let c = try Case(name)
        let result = c.signer.presign(c.request, date: c.date, expires: c.expires)
        try expectMatches(result, name, mode: "query")
    }

    @Test("credentials never print their secret")
    func secretHidden() {
        let credentials = SigV4Credentials(accessKeyID: "AKID", secretAccessKey: "very-secret", sessionToken: "token-secret")
        #expect(!"\(credentials)".contains("very-secret") && !"\(credentials)".contains("token-secret"))
    }
}
