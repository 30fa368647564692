/// An error with a stable machine-readable code and a sentence a person can act on. Every error the
/// program reports is one: printed as `<code>: <message>`, and (later) mapped to HTTP in one place.
public protocol CodedError: Error, Sendable, CustomStringConvertible {
    /// The stable code: `not_found`, `unavailable`, `corrupt_media`, …
    var codeName: String { get }
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(codeName): \(message)" }
}
