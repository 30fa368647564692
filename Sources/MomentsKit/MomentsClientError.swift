import Foundation
import MomentsContract
import MomentsModel

/// Why a call to Moments failed: the server's answer (its status, stable code and sentence), or
/// the network, or an answer that is not what the contract says.
public struct MomentsClientError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The server answered with an error (`status`, `code`, `message` are its own).
        case server
        /// No answer: no connection, a timeout, a dropped connection.
        case transport
        /// An answer the client cannot read (not the contract's JSON).
        case invalidResponse = "invalid_response"
        /// A local file could not be read or written.
        case file
        case cancelled
        /// The call asked for something no request can carry (a library track and a track file both).
        case invalidRequest = "invalid_request"
    }

    public var kind: Kind
    /// The HTTP status, for `server` errors.
    public var status: Int?
    /// The server's stable code (`quota_exceeded`, `not_a_video`, …), or the client's own for other kinds.
    public var code: String
    /// A sentence to show as it is.
    public var message: String
    /// The request's id, for `server` errors from a 1.2 server: to quote when asking for help (the
    /// server's logs name it).
    public var requestID: String?

    public init(kind: Kind, status: Int? = nil, code: String, message: String, requestID: String? = nil) {
        self.kind = kind
        self.status = status
        self.code = code
        self.message = message
        self.requestID = requestID
    }

    public var description: String { "\(code): \(message)" }

    /// `code` as a value to switch on (`.quotaExceeded`, `.notAVideo`, …; `.other` for a code this
    /// version does not know), to say the error in the app's own words.
    public var errorCode: MomentsErrorCode { MomentsErrorCode(rawValue: code) }

    /// Worth trying again later (the server or the network had trouble, not the request).
    public var isTransient: Bool {
        switch kind {
        case .transport: true
        case .server: [408, 429, 500, 502, 503, 504].contains(status ?? 0)
        case .invalidResponse, .file, .cancelled, .invalidRequest: false
        }
    }

    static func transport(_ error: any Error) -> MomentsClientError {
        if error is CancellationError || (error as? URLError)?.code == .cancelled {
            return MomentsClientError(kind: .cancelled, code: "cancelled", message: "The request was cancelled.")
        }
        let reason = (error as? URLError).map { "\($0.localizedDescription) (\($0.code.rawValue))" } ?? "\(error)"
        return MomentsClientError(kind: .transport, code: "network_error", message: "Could not reach the Moments server: \(reason)")
    }

    static func invalid(_ what: String) -> MomentsClientError {
        MomentsClientError(kind: .invalidResponse, code: "invalid_response", message: what)
    }

    /// The error of a non-2xx answer: the server's JSON error when it sent one.
    static func server(status: Int, body: Data) -> MomentsClientError {
        if let reply = try? JSONDecoder().decode(ErrorReply.self, from: body) {
            return MomentsClientError(
                kind: .server, status: status, code: reply.error.code, message: reply.error.message, requestID: reply.error.requestID)
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return MomentsClientError(
            kind: .server, status: status, code: "http_\(status)",
            message: "The server answered HTTP \(status)\(text.isEmpty ? "" : ": \(text)").")
    }
}
