import Foundation
import JobStore
import Jobs
import Logging
import MomentsModel
import Synchronization

/// The work a job does. The worker takes care of leases, heartbeats, cancellation, retries and
/// acknowledgement; a handler only does the work, reports progress and returns the result.
///
/// A handler must stop soon after its task is cancelled (cancellation, lost lease, shutdown) and
/// leave nothing behind.
public protocol JobHandler: Sendable {
    func process(_ job: JobRecord, context: JobContext) async throws -> JobResult

    /// Removes what a finished `process` left behind when the job was cancelled before its result
    /// could be recorded (the cancellation arrived after the work was done).
    func discard(_ result: JobResult) async

    /// Called once the job's completion is recorded, to let go of what only the work needed.
    /// Returns true when it deleted the job's source from storage (recorded as `source_deleted_at`).
    func completed(_ job: JobRecord) async -> Bool
}

extension JobHandler {
    public func discard(_ result: JobResult) async {}
    public func completed(_ job: JobRecord) async -> Bool { false }
}

/// What a running job may tell the world: its progress, written to PostgreSQL at most every
/// `progressInterval` and at once when the stage changes.
public final class JobContext: Sendable {
    public let lease: JobLease
    let jobs: Jobs
    let logger: Logger
    let progressInterval: Duration
    private let state = Mutex<(lastWrite: ContinuousClock.Instant?, stage: String?)>((nil, nil))
    /// When the work last reported, and the deadline it set itself (for the worker's watchdog).
    private let watch = Mutex<(lastActivity: ContinuousClock.Instant, expected: (from: ContinuousClock.Instant, duration: Duration)?)>(
        (.now, nil))

    init(lease: JobLease, jobs: Jobs, logger: Logger, progressInterval: Duration) {
        self.lease = lease
        self.jobs = jobs
        self.logger = logger
        self.progressInterval = progressInterval
    }

    /// Records progress (0–100), the stage and a sentence a person understands. Writes that come
    /// too soon after the last one within the same stage are skipped.
    public func progress(_ percent: Int, stage: String, message: String) async {
        let now = ContinuousClock.now
        watch.withLock { $0.lastActivity = now }
        let due = state.withLock { state -> Bool in
            let due = state.stage != stage || state.lastWrite.map { now - $0 >= progressInterval } ?? true
            if due { state = (now, stage) }
            return due
        }
        guard due else { return }
        do {
            _ = try await jobs.progress(lease, percent: percent, stage: stage, message: message)
        } catch {
            logger.warning("progress not recorded", metadata: ["error": "\(error)"])
        }
    }
}

extension JobContext {
    /// Says how long the rest of the work should take (a highlight worker says so once it knows
    /// the source's length); the attempt's deadline becomes a multiple of it.
    public func expect(_ duration: Duration) {
        watch.withLock { $0.expected = (ContinuousClock.now, duration) }
    }

    /// Why the watchdog should stop the attempt now, if it should.
    func overdue(started: ContinuousClock.Instant, configuration: WorkerConfiguration, now: ContinuousClock.Instant = .now) -> ErrorCode? {
        let (lastActivity, expected) = watch.withLock { ($0.lastActivity, $0.expected) }
        if now - lastActivity >= configuration.stallLimit { return .attemptStalled }
        var deadline = started + configuration.attemptLimit
        if let expected {
            deadline = min(deadline, expected.from + max(configuration.deadlineFloor, expected.duration * configuration.deadlineMultiple))
        }
        return now >= deadline ? .attemptTimeout : nil
    }
}
