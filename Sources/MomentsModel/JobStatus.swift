/// Where a job is in its life. The raw values are stored in PostgreSQL and sent to clients; never rename one.
public enum JobStatus: String, Sendable, Codable, CaseIterable {
    /// Waiting for a worker (new, or waiting out a retry delay).
    case pending
    /// A worker holds its lease and is working on it.
    case processing
    case completed
    case failed
    case cancelled

    /// Completed, failed and cancelled jobs never change again.
    public var isTerminal: Bool {
        switch self {
        case .pending, .processing: false
        case .completed, .failed, .cancelled: true
        }
    }
}
