import API
import Foundation
import MomentsKit
import MomentsModel
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

    @Test("MomentsKit's MomentsErrorCode has a case for every code of the list and every job failure, and keeps unknown ones")
    func sdkEnum() {
        let known = MomentsErrorCode.allKnown.map(\.rawValue)
        #expect(Array(known.prefix(Self.codes.count)) == Self.codes, "the API's codes first, in their order")
        let jobCodes = ErrorCode.allCases.map(\.rawValue)
        #expect(Set(jobCodes).isSubset(of: Set(known)), "job failures missing: \(Set(jobCodes).subtracting(known).sorted())")
        #expect(Set(known).count == known.count, "a code twice")
        for code in known {
            let value = MomentsErrorCode(rawValue: code)
            #expect(value.rawValue == code, "\(code) round trips")
            if case .other = value { Issue.record("\(code) has no case of its own") }
        }
        #expect(MomentsErrorCode(rawValue: "quota_exceeded") == .quotaExceeded)
        #expect(MomentsErrorCode(rawValue: "http_413") == .http(413) && MomentsErrorCode.http(413).rawValue == "http_413")
        #expect(MomentsErrorCode(rawValue: "teleport_failed") == .other("teleport_failed"))
        #expect(MomentsErrorCode(rawValue: "http_4130") == .other("http_4130"))
        #expect(MomentsClientError(kind: .server, status: 402, code: "quota_exceeded", message: "No.").errorCode == .quotaExceeded)
    }

    @Test("MomentsKit's allKnown lists every case the enum declares (a case left out would decode as .other)")
    func sdkEnumComplete() throws {
        let file = TestServices.repository.appendingPathComponent("Sources/MomentsKit/MomentsErrorCode.swift")
        let source = try String(contentsOf: file, encoding: .utf8)
        let declared = source.split(separator: "\n").filter { $0.hasPrefix("    case ") && !$0.contains("(") }
            .flatMap { $0.dropFirst("    case ".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let listed = MomentsErrorCode.allKnown.map { "\($0)" }.map(Self.camelCase)
        #expect(declared.count > 90)
        #expect(Set(declared) == Set(listed), "declared, not listed: \(Set(declared).subtracting(listed).sorted())")
    }

    /// `invalid_callback_url` → `invalidCallbackUrl`: a case's name from its code.
    static func camelCase(_ code: String) -> String {
        let words = code.split(separator: "_")
        return ([String(words[0])] + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }).joined()
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
