import Foundation
import JobStore
import Logging
import MomentsModel
import Tracing

/// Every job operation, over the job store (PostgreSQL: the truth) and a queue driver (Redis in
/// production): the API, the command line and the worker all go through it, and nothing else
/// touches both. PostgreSQL is always written first; the queue follows, and where a queue call
/// fails the reconciler repairs it from PostgreSQL, so such a failure is logged, never thrown.
public struct Jobs: Sendable {
    let store: JobStore
    let queue: any JobQueueDriver
    let logger: Logger

    public init(store: JobStore, queue: any JobQueueDriver, logger: Logger) {
        self.store = store
        self.queue = queue
        self.logger = logger
    }

    /// Creates what the queue needs (at start-up; idempotent).
    public func prepare() async throws { try await queue.prepare() }

    // MARK: Submitting and changing jobs

    /// Writes the job's row, then queues it, so nobody ever holds the id of a job that does not
    /// exist. Submitting the same job again (same id and source) writes nothing and queues it only
    /// if it is still pending and the queue lost it: a retried request is one job. `monthlyLimit`:
    /// the owner's plan, checked under a lock with the insert.
    ///
    /// Traced as a producer span under the caller's (the upload request's): the job keeps that
    /// span's context, so its attempts and webhooks join the same trace.
    public func submit(_ job: NewJob, monthlyLimit: Int? = nil) async throws(JobStoreError) -> CreateOutcome {
        let span = startSpan("job submit", context: ServiceContext.current ?? .topLevel, ofKind: .producer)
        defer { span.end() }
        span.attributes["moments.job.id"] = job.id.uuidString.lowercased()
        var job = job
        if job.traceContext == nil { job.traceContext = JobTrace.headers(of: span.context) }
        let outcome: CreateOutcome
        do {
            outcome = try await store.create(job, monthlyLimit: monthlyLimit)
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
        switch outcome {
        case .created(let record):
            if record.status == .pending {
                await afterTruth("queue the job", job: record.id) { try await queue.enqueue(record.id) }
            }
        case .quotaExceeded:
            span.attributes["moments.job.refused"] = "quota_exceeded"
        }
        return outcome
    }

    /// How many highlights `owner` has made this month, and when the month ends (the quota's
    /// early check, before an upload's bytes are taken; `submit` checks it again atomically).
    public func monthlyUsage(owner: String) async throws(JobStoreError) -> MonthlyUsage {
        try await store.monthlyUsage(owner: owner)
    }

    /// The job id an earlier request with `owner`'s idempotency `key` was given (within the key's
    /// day), if any.
    public func earlierJob(owner: String?, idempotencyKey key: String) async throws(JobStoreError) -> UUID? {
        try await store.idempotencyKey(owner: owner, key: key)?.jobID
    }

    /// Records `owner`'s idempotency `key` for a request (its endpoint and fingerprint) under job
    /// id `proposed`, before anything is made under that id, unless a live record holds the key
    /// already: the answer is the record that holds it, this request's or an earlier one's.
    public func claim(
        idempotencyKey key: String, owner: String?, endpoint: String, fingerprint: String, proposed: UUID
    ) async throws(JobStoreError) -> IdempotencyRecord {
        try await store.claimIdempotencyKey(owner: owner, key: key, endpoint: endpoint, fingerprint: fingerprint, jobID: proposed)
    }

    /// Cancels a pending or processing job (of `owner`, when given). A pending job leaves the
    /// queue; a running one hears it from its lease.
    public func cancel(_ id: UUID, owner: String? = nil, detail: String = "cancelled on request") async throws(JobStoreError) -> CancelOutcome {
        let outcome = try await store.cancel(id, owner: owner, detail: detail)
        if case .cancelled = outcome {
            await afterTruth("take the cancelled job off the queue", job: id) { try await queue.remove(id) }
        }
        return outcome
    }

    /// Gives a failed job `attempts` more attempts and queues it again (off the dead-letter list).
    public func retry(_ id: UUID, attempts: Int = 3, detail: String = "retried by an operator") async throws(JobStoreError) -> RequeueOutcome {
        let outcome = try await store.requeue(id, attempts: max(1, attempts), detail: detail)
        if case .requeued = outcome {
            await afterTruth("queue the retried job", job: id) {
                try await queue.unmarkDead(id)
                try await queue.enqueue(id)
            }
        }
        return outcome
    }

    // MARK: The queue as a whole

    /// Workers stop taking new jobs (running ones finish); uploads are still accepted and wait.
    /// PostgreSQL keeps it, the queue a copy for the workers' every look.
    public func pause() async throws {
        try await store.setQueuePaused(true)
        try await queue.setPaused(true)
        logger.notice("queue paused")
    }

    /// Workers take jobs again.
    public func resume() async throws {
        try await store.setQueuePaused(false)
        try await queue.setPaused(false)
        logger.notice("queue resumed")
    }

    /// Whether the queue is paused: the queue's copy, or, when it has none (a Redis that restarted
    /// empty), PostgreSQL's, which is then copied back. Throws when neither can say: a worker then
    /// takes nothing.
    public func isPaused() async throws -> Bool {
        if let paused = try await queue.pausedState() { return paused }
        let paused = try await store.isQueuePaused()
        try await queue.setPaused(paused)
        logger.notice("the queue had lost whether it is paused; restored from PostgreSQL", metadata: ["paused": "\(paused)"])
        return paused
    }

    public func stats() async throws -> QueueStats { try await queue.stats() }

    /// The job's row as it is now (nil when there is none).
    public func job(_ id: UUID) async throws(JobStoreError) -> JobRecord? { try await store.job(id) }

    /// Applies the database's migrations that are not applied yet (at start-up; idempotent, one
    /// process at a time); answers the versions it applied.
    @discardableResult
    public func migrate() async throws(JobStoreError) -> [Int] { try await store.migrate() }

    public func isQueueReachable() async -> Bool { await queue.isReachable() }

    // MARK: Queue bookkeeping

    /// A queue call made after PostgreSQL recorded the truth: its failure is logged, and the
    /// reconciler (or a lapsed lease) repairs it later.
    func afterTruth(_ what: String, job: UUID? = nil, logger: Logger? = nil, _ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            var metadata: Logger.Metadata = ["error": "\(error)", "step": "\(what)"]
            if let job { metadata["job_id"] = "\(job.uuidString.lowercased())" }
            (logger ?? self.logger).warning("queue bookkeeping failed; the reconciler will repair it", metadata: metadata)
        }
    }
}
