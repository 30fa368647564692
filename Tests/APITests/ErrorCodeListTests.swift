import API
import Foundation
import ServiceTestSupport
import Testing

/// The API's error codes are one list (`APIErrorCode.all`): the OpenAPI document's `enum` is that
/// list, docs/api.md names every code in it, and no controller spells a code of its own.
@Suite("Error codes: one list")
struct ErrorCodeListTests {
    static let codes = APIErrorCode.all.map(\.rawValue)

    @Test("The list has no code twice, and each is lower_snake_case")
    func wellFormed() {
        #expect(Set(Self.codes).count == Self.codes.count, "a code twice: \(Self.codes)")
        for code in Self.codes { #expect(code.wholeMatch(of: /[a-z]+(_[a-z0-9]+)*/) != nil, "\(code)") }
        #expect(APIErrorCode.http(.init(code: 413)).rawValue == "http_413")
    }

    @Test("/openapi.yaml's enum for an error's code is the list, in its order")
    func openAPIEnum() throws {
        let line = try #require(OpenAPIDocument.yaml.split(separator: "\n").first { $0.contains("{type: string, enum: [invalid_request") })
        let inside = try #require(line.split(separator: "[").last?.split(separator: "]").first)
        #expect(inside.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } == Self.codes)
    }

    @Test("docs/api.md names every code of the list")
    func documented() throws {
        let text = try String(contentsOf: TestServices.repository.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let missing = Self.codes.filter { !text.contains("`\($0)`") }
        #expect(missing.isEmpty, "docs/api.md does not name \(missing)")
    }

    @Test("No source spells an error code as a string: every APIError names one of the list")
    func noLiterals() throws {
        let sources = TestServices.repository.appendingPathComponent("Sources/API")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL })
        var found: [String] = []
        for file in files where file.pathExtension == "swift" && file.lastPathComponent != "APIErrorCode.swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: /APIErrorCode\(rawValue:|APIError\([^,"\n]*, "/) {
                found.append("\(file.lastPathComponent): \(text[match.range])")
            }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
