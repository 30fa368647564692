import MomentsModel

/// A failure of the database, with a stable code. The message never contains SQL or credentials;
/// the full error goes to the log.
public typealias JobStoreError = CodedFailure<JobStoreErrorCode>

/// The codes of `JobStoreError`.
public enum JobStoreErrorCode: String, Sendable {
    /// PostgreSQL could not be reached or refused the request; worth retrying.
    case unavailable
    /// A job with this id exists with different content, or is in a status the request does not fit.
    case conflict
    /// No such job (administration commands).
    case notFound = "not_found"
    case invalidConfiguration = "invalid_configuration"
}
