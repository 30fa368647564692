import Foundation
import MomentsModel

// The JSON of Moments' HTTP API (docs/client-contract.md): the server encodes these types and
// MomentsKit decodes them, so the two cannot drift. Keys are snake_case; every key the contract
// names is always present (`null` when empty), hence the hand-written `encode(to:)`s (the
// synthesized ones leave nil out; the synthesized decoders already read a missing key or `null` as
// nil); dates are ISO-8601 in UTC without fractional seconds.

/// Every error answer: `{"error": {"code": "...", "message": "..."}}`.
public struct ErrorReply: Codable, Equatable, Sendable {
    public struct Detail: Codable, Equatable, Sendable {
        /// Stable, for code to branch on (`quota_exceeded`, `not_a_video`, …).
        public var code: String
        /// A sentence to show as it is.
        public var message: String
        /// The request's `X-Request-Id` (1.2; nil from older servers), to quote when asking for help.
        public var requestID: String?

        public init(code: String, message: String, requestID: String? = nil) {
            self.code = code
            self.message = message
            self.requestID = requestID
        }

        enum CodingKeys: String, CodingKey {
            case code, message, requestID = "request_id"
        }
    }

    public var error: Detail

    public init(code: String, message: String, requestID: String? = nil) {
        error = Detail(code: code, message: message, requestID: requestID)
    }
}

/// The encoder and decoder of the contract's JSON.
public enum MomentsJSON {
    /// ISO-8601 in UTC without fractional seconds (`2026-11-21T10:15:03Z`), what the app's
    /// `JSONDecoder.DateDecodingStrategy.iso8601` accepts; keys sorted for stable output.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Reads the contract's dates as the iOS app does (ISO-8601, no fractions).
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// `2026-11-21T10:15:03Z`: whole seconds, rounded down.
    public static func format(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }
}
