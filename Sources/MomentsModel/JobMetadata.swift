import Foundation

/// The app's own strings, kept with a job and returned wherever the job is shown: the status, its
/// details, the job list, Server-Sent Events and webhooks (API 1.2's `metadata`, as Mux's
/// `passthrough`). An app puts there what it needs to find its own record again (an album, a
/// user, a draft); the server never reads it.
public enum JobMetadata {
    /// The most bytes the object may take as compact JSON (keys sorted, as it is stored and shown).
    public static let maxBytes = 1024
    /// The longest key, in characters (Unicode scalars).
    public static let maxKeyLength = 40

    /// Why a `metadata` was refused: a sentence for the client.
    public struct Invalid: Error, Equatable {
        public var message: String
    }

    /// What every refusal says the rule is.
    public static let rule =
        #"metadata must be a JSON object of strings, like {"album": "Summer 2026"}: keys of 1 to 40 characters, at most 1,024 bytes in all."#

    /// `values` when they keep the rules; nil for an empty object (the same as none).
    public static func check(_ values: [String: String]) throws(Invalid) -> [String: String]? {
        guard !values.isEmpty else { return nil }
        for (key, value) in values {
            // Characters as JSON Schema's maxLength counts them: Unicode scalars.
            let length = key.unicodeScalars.count
            guard (1...maxKeyLength).contains(length) else {
                throw Invalid(message: "\(rule) The key \(quoted(key)) has \(length) characters.")
            }
            // PostgreSQL's jsonb holds no U+0000, and no app means one.
            guard !key.unicodeScalars.contains("\0"), !value.unicodeScalars.contains("\0") else {
                throw Invalid(message: "\(rule) The key \(quoted(key)) or its value holds the character U+0000.")
            }
        }
        let bytes = json(values).utf8.count
        guard bytes <= maxBytes else { throw Invalid(message: "\(rule) This one takes \(bytes) bytes.") }
        return values
    }

    /// The text of a form field (`POST /api/v1/upload`'s `metadata` part, `moments submit
    /// --metadata`): a JSON object of strings; nil when absent or empty.
    public static func parse(_ text: String?) throws(Invalid) -> [String: String]? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        let values: [String: String]
        do { values = try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) } catch {
            throw Invalid(message: rule)
        }
        return try check(values)
    }

    /// The compact JSON the object is stored and measured as: keys sorted, slashes unescaped.
    public static func json(_ values: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(values) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A key as the message shows it: in quotes, cut to 50 characters.
    private static func quoted(_ key: String) -> String {
        "\"\(key.count > 50 ? key.prefix(47) + "..." : Substring(key))\""
    }
}
