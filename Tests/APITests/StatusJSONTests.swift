import Foundation
import MomentsContract
import MomentsModel
import NIOCore
import Testing

@testable import API

@Suite("The status poll's own JSON and token reading (no services)")
struct StatusJSONTests {
    /// A small deterministic generator, so a failure can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let pieces = [
        "", "a", "Beach day", "\"quoted\"", "back\\slash", "slash/path", "line\nbreak", "tab\t", "\r", "\u{8}\u{c}",
        "\u{1}\u{1f}\u{7f}", "é", "😀 party", "\u{2028}", "日本語", "</script>", "%20", "null",
    ]

    static func text(_ random: inout Generator) -> String? {
        if Int.random(in: 0..<5, using: &random) == 0 { return nil }
        return (0..<Int.random(in: 1...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    static func date(_ random: inout Generator) -> Date {
        // From 1960 to 2200, with fractions of a second.
        Date(timeIntervalSince1970: Double.random(in: -315_619_200...7_258_118_400, using: &random))
    }

    static func report(_ random: inout Generator) -> JobStatusReport {
        let status = JobStatus.allCases.randomElement(using: &random)!
        let durations: [Double?] = [
            nil, 0, 30, 30.5, 0.1, 1.0 / 3.0, 1e-7, 1e21, 123456789.123, 59.999999, Double.random(in: 0...7200, using: &random),
        ]
        return JobStatusReport(
            jobID: UUID(), status: status, progress: Int.random(in: 0...100, using: &random), message: text(&random),
            resultURL: Bool.random(using: &random) ? "https://moments.example.com/api/v1/jobs/x/download" : nil,
            createdAt: date(&random), completedAt: Bool.random(using: &random) ? date(&random) : nil,
            originalFilename: text(&random), duration: durations.randomElement(using: &random)!,
            segmentsSelected: Bool.random(using: &random) ? Int.random(in: 0...60, using: &random) : nil,
            posterURL: Bool.random(using: &random) ? "http://127.0.0.1:8000/api/v1/jobs/x/poster" : nil,
            metadata: Bool.random(using: &random) ? nil : metadata(&random))
    }

    /// An app's metadata: up to five keys and values made of the same pieces.
    static func metadata(_ random: inout Generator) -> [String: String] {
        var values: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &random) { values[text(&random) ?? "k"] = text(&random) ?? "" }
        return values
    }

    static func written(_ report: JobStatusReport) -> String {
        var buffer = ByteBuffer()
        StatusJSON.write(report, to: &buffer)
        return String(buffer: buffer)
    }

    @Test("Byte for byte what MomentsJSON.encoder writes, over 5,000 reports of every kind")
    func sameBytes() throws {
        var random = Generator(state: 17)
        for index in 0..<5_000 {
            let report = Self.report(&random)
            let expected = String(decoding: try MomentsJSON.encoder.encode(report), as: UTF8.self)
            let written = Self.written(report)
            #expect(written == expected, "report \(index)")
            if written != expected { return }
        }
    }

    @Test("Dates at the edges: leap days, centuries, the epoch, before it, fractions rounded down")
    func dates() throws {
        let seconds: [Double] = [
            0, -0.5, -1, -86_400, 951_782_400, 951_868_799.999, 4_107_542_400, 13_574_563_200, 1_798_761_599.75,
            1_764_000_000, 253_402_300_799,
        ]
        for second in seconds {
            let report = JobStatusReport(
                jobID: UUID(), status: .completed, progress: 100, message: nil, resultURL: nil,
                createdAt: Date(timeIntervalSince1970: second), completedAt: nil, originalFilename: nil,
                duration: nil, segmentsSelected: nil)
            #expect(Self.written(report) == String(decoding: try MomentsJSON.encoder.encode(report), as: UTF8.self), "\(second)")
        }
    }

    @Test("The response carries the JSON content type and length Hummingbird's encoder gives")
    func response() throws {
        var random = Generator(state: 5)
        let report = Self.report(&random)
        let response = StatusJSON.response(report)
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == "application/json; charset=utf-8")
        #expect(response.headers[.contentLength] == String(try MomentsJSON.encoder.encode(report).count))
    }

    /// How tokens were read before the fast path: split at the first space, `bearer` in any case,
    /// blanks trimmed.
    static func generalToken(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    @Test("The fast token reading agrees with the general one wherever it answers, and hashes as SHA-256 hex")
    func tokens() {
        let token = "mdt_" + String(repeating: "Ab9-_", count: 8) + "xyz"
        let headers = [
            "Bearer \(token)", "bearer \(token)", "BEARER \(token)", "BeArEr \(token)", "Bearer  \(token)", " Bearer \(token)",
            "Bearer \(token) ", "Bearer\t\(token)", "Basic \(token)", "Bearer", "Bearer ", "Bearerx \(token)", "Bearer tok en",
            "Bearer é\(token)", "Bearer \u{7f}", "Token \(token)", "bearer x", "Bearer \"quoted\"",
        ]
        for header in headers {
            if let fast = DeviceToken.canonicalToken(header) {
                #expect(fast == Self.generalToken(header), "\(header)")
            }
        }
        #expect(DeviceToken.canonicalToken("Bearer \(token)") == token)
        #expect(DeviceToken.canonicalToken("Bearer  \(token)") == nil, "other forms go the general way")
        #expect(DeviceToken.sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
