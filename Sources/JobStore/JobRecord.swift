import Foundation
@_exported import MomentsContract
import MomentsModel

/// What the API knows when it creates a job.
public struct NewJob: Sendable {
    public var id: UUID
    public var owner: String?
    public var originalFilename: String?
    public var sourceKey: String
    public var sourceSize: Int64?
    public var targetDuration: Double
    public var quality: Quality
    public var codec: VideoCodecChoice
    public var maxAttempts: Int
    /// Gets a signed POST when the job ends.
    public var callbackURL: String?

    public init(id: UUID = UUID(), owner: String? = nil, originalFilename: String? = nil, sourceKey: String,
                sourceSize: Int64? = nil, targetDuration: Double = 30, quality: Quality = .high, codec: VideoCodecChoice = .auto,
                maxAttempts: Int = 3, callbackURL: String? = nil) {
        self.id = id
        self.owner = owner
        self.originalFilename = originalFilename
        self.sourceKey = sourceKey
        self.sourceSize = sourceSize
        self.targetDuration = targetDuration
        self.quality = quality
        self.codec = codec
        self.maxAttempts = maxAttempts
        self.callbackURL = callbackURL
    }
}

/// One row of `jobs`.
public struct JobRecord: Sendable, Equatable {
    public var id: UUID
    public var owner: String?
    public var status: JobStatus
    public var progress: Int
    public var stage: String?
    public var message: String?
    public var errorCode: String?
    public var errorMessage: String?
    public var originalFilename: String?
    public var sourceKey: String
    public var sourceSize: Int64?
    public var resultKey: String?
    public var resultSize: Int64?
    public var targetDuration: Double
    public var quality: Quality
    public var codec: VideoCodecChoice = .auto
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var attempt: Int
    public var maxAttempts: Int
    public var runAfter: Date
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    public var createdAt: Date
    public var startedAt: Date?
    public var completedAt: Date?
    public var updatedAt: Date
    /// The parts of the source the highlight shows, once completed.
    public var segments: [SelectedSegment]?
    public var callbackURL: String?
    /// When the source was deleted from storage (after success, or by the retention sweep).
    public var sourceDeletedAt: Date?
    /// When the retention sweep deleted the highlight and the source; the download answers 410 after.
    public var resultExpiredAt: Date?
}

/// One row of `job_events`: a status change.
public struct JobEvent: Sendable, Equatable {
    public var at: Date
    public var from: JobStatus?
    public var to: JobStatus
    public var attempt: Int
    public var worker: String?
    public var detail: String?
}

/// The proof that a worker holds a job: the job and the attempt its claim started. Every later
/// transition names both, so a worker whose lease was taken over is refused.
public struct JobLease: Sendable, Equatable, CustomStringConvertible {
    public var jobID: UUID
    public var attempt: Int
    public var worker: String

    public init(jobID: UUID, attempt: Int, worker: String) {
        self.jobID = jobID
        self.attempt = attempt
        self.worker = worker
    }

    public var description: String { "\(jobID) attempt \(attempt) on \(worker)" }
}

/// The answer to a claim.
public enum ClaimResult: Sendable, Equatable {
    /// The worker holds the job now.
    case claimed(JobLease, JobRecord)
    /// Another worker holds a lease that has not lapsed.
    case heldByAnother(worker: String, until: Date)
    /// A pending job whose retry delay has not passed.
    case notYet(runAfter: Date)
    /// Its lease lapsed on the last allowed attempt: the job was failed with `exhausted_retries` now.
    case exhausted
    /// Completed, failed or cancelled: nothing to do.
    case finished(JobStatus)
    case notFound
}

/// Whether a worker still holds its lease.
public enum LeaseState: Sendable, Equatable {
    case held
    /// The job was cancelled: stop and clean up.
    case cancelled
    /// Another attempt took over, or the job ended some other way: stop without touching it.
    case lost
}

/// What a worker's job produced, recorded with `complete`.
public struct JobResult: Sendable, Equatable {
    public var resultKey: String
    public var resultSize: Int64
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var segments: [SelectedSegment]?

    public init(resultKey: String, resultSize: Int64, sourceDuration: Double? = nil, segmentsSelected: Int? = nil,
                segments: [SelectedSegment]? = nil) {
        self.resultKey = resultKey
        self.resultSize = resultSize
        self.sourceDuration = sourceDuration
        self.segmentsSelected = segmentsSelected ?? segments?.count
        self.segments = segments
    }
}

/// The answer to `fail`.
public enum FailOutcome: Sendable, Equatable {
    /// Back to `pending`, to start again at the given time.
    case willRetry(at: Date)
    /// Terminal: `failed` with the given code (the error's own, or `exhausted_retries`).
    case failed(code: String)
    /// The lease was not held (taken over, cancelled): nothing changed.
    case refused
}

/// The answer to `cancel`.
public enum CancelOutcome: Sendable, Equatable {
    /// Cancelled now; it was in the given status.
    case cancelled(from: JobStatus)
    /// Already completed, failed or cancelled.
    case alreadyFinished(JobStatus)
    case notFound
}

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

/// The answer to `create(_:monthlyLimit:)`.
public enum CreateOutcome: Sendable, Equatable {
    case created(JobRecord)
    /// The owner has `used` highlights this month, the plan's `limit`: nothing was written.
    case quotaExceeded(used: Int, limit: Int)
}
