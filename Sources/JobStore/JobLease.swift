import Foundation
import MomentsModel

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
    /// This attempt completed the job (a completion whose answer went missing did land).
    case completed
}

/// A part of the source the highlight plays, as the `segments` column keeps it (JSON: start, end,
/// score). The API shows it as its own type (`SelectedSegment`).
public struct ResultSegment: Codable, Equatable, Sendable {
    /// Where the part starts and ends in the source, in seconds.
    public var start: Double
    public var end: Double
    /// 0–1: how good the part scored.
    public var score: Double

    public init(start: Double, end: Double, score: Double) {
        self.start = start
        self.end = end
        self.score = score
    }
}

/// What a worker's job produced, recorded with `complete`.
public struct JobResult: Sendable, Equatable {
    public var resultKey: String
    public var resultSize: Int64
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var segments: [ResultSegment]?
    public var sourceMedia: SourceMedia?
    /// The poster JPEG and the thumbnail strip this attempt stored.
    public var posterKey: String?
    public var thumbnailsKey: String?

    public init(
        resultKey: String, resultSize: Int64, sourceDuration: Double? = nil, segmentsSelected: Int? = nil,
        segments: [ResultSegment]? = nil, sourceMedia: SourceMedia? = nil, posterKey: String? = nil, thumbnailsKey: String? = nil
    ) {
        self.resultKey = resultKey
        self.resultSize = resultSize
        self.sourceDuration = sourceDuration
        self.segmentsSelected = segmentsSelected ?? segments?.count
        self.segments = segments
        self.sourceMedia = sourceMedia
        self.posterKey = posterKey
        self.thumbnailsKey = thumbnailsKey
    }

    /// Every object the attempt stored.
    public var keys: [String] { [resultKey] + [posterKey, thumbnailsKey].compactMap { $0 } }
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
