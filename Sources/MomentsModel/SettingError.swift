/// A missing or malformed setting; the message names the variable.
public struct SettingError: CodedError, Equatable {
    public var codeName: String { "invalid_configuration" }
    public var message: String

    public init(_ message: String) { self.message = message }
}
