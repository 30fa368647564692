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

/// The usual shape of a `CodedError`: a code from a string enum and a message. Each subsystem names
/// its own (`typealias StorageError = CodedFailure<StorageErrorCode>`), so the codes of one can grow
/// without touching the others.
public struct CodedFailure<Code: RawRepresentable & Sendable & Equatable>: CodedError, Equatable where Code.RawValue == String {
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var codeName: String { code.rawValue }
}
