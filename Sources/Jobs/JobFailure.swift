import MomentsModel

/// How an attempt failed. `retryable` failures are tried again with backoff until the job's
/// attempts run out; the others fail the job at once with `code` and `message`.
public struct JobFailure: Error, Sendable, Equatable {
    public var code: String
    public var message: String
    public var retryable: Bool
    /// For operators, stored with the attempt and never shown to the app (a crashed engine's signal
    /// and the last lines of its standard error).
    public var diagnostics: String?
    /// What the job says if no attempt is left after this one; nil: that it could not be processed
    /// after so many attempts and to try again later (right for failures that may pass).
    public var finalMessage: String?

    public init(code: String, message: String, retryable: Bool, diagnostics: String? = nil, finalMessage: String? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable
        self.diagnostics = diagnostics
        self.finalMessage = finalMessage
    }

    /// The engine's errors: bad media is permanent, the rest may pass.
    public init(_ error: MomentsError) {
        self.init(code: error.code.rawValue, message: error.message, retryable: !error.code.isPermanent)
    }

    /// Any error as a failure: ours keep their code; anything else is an internal error worth retrying.
    public init(describing error: any Error) {
        switch error {
        case let failure as JobFailure: self = failure
        case let error as MomentsError: self.init(error)
        case is CancellationError: self.init(code: ErrorCode.internalError.rawValue, message: "The job stopped unexpectedly.", retryable: true)
        default: self.init(code: ErrorCode.internalError.rawValue, message: "Something went wrong on our side. Please try again.", retryable: true)
        }
    }
}
