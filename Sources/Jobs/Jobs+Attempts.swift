import Foundation
import JobStore
import Logging
import MomentsModel
import MomentsSupport

/// How an attempt ended, as the worker saw it.
public enum AttemptOutcome: Sendable {
    case succeeded(JobResult)
    /// Failed; a retryable failure is tried again after `retryDelay`.
    case failed(JobFailure, retryDelay: Duration)
    /// Stopped because the job was cancelled.
    case cancelled
    /// Stopped unfinished at shutdown: handed back for another worker.
    case givenBack
}

/// How an attempt was recorded (the worker's metrics count these).
public enum AttemptEnd: String, CaseIterable, Sendable {
    case completed, failed, retrying, cancelled
    /// Lost to another attempt, as the store confirmed: what this attempt made is its own to delete.
    case superseded
    /// Given back at shutdown, or not recordable now (it runs again after its lease).
    case interrupted
}

extension Jobs {
    /// Claims a delivered job for `worker`: a new attempt, whose number fences every later write.
    /// Answers the lease and the job to run, or nil when there is nothing to run, with the queue
    /// told why: a finished or unknown job is acknowledged, one out of attempts dead-lettered, one
    /// not yet due delayed, one held by a live lease left to its holder. Nil too when PostgreSQL
    /// stays away for 30 s: the delivery is kept and comes back after its lease.
    public func claim(_ delivery: Delivery, worker: String, lease: Duration, logger: Logger) async -> (JobLease, JobRecord)? {
        let claim: ClaimResult
        do {
            claim = try await persisting(logger) { () throws(JobStoreError) in
                try await store.claim(delivery.jobID, worker: worker, lease: lease)
            }
        } catch {
            logger.error("could not claim; the delivery stays and comes back after the lease", metadata: ["error": "\(error)"])
            return nil
        }
        switch claim {
        case .claimed(let lease, let job):
            return (lease, job)
        case .finished, .notFound:
            await afterTruth("acknowledge", logger: logger) { try await queue.acknowledge(delivery) }
        case .exhausted:
            logger.warning("dead-lettered: no attempts left")
            await deadLetter(delivery, logger: logger)
        case .notYet(let runAfter):
            let wait = Duration.milliseconds(Int(saturating: max(0, runAfter.timeIntervalSinceNow) * 1000))
            await afterTruth("delay", logger: logger) { try await queue.retry(delivery, after: wait) }
        case .heldByAnother(let holder, _):
            // Left alone: if that worker finishes it acknowledges, if it dies the lease lapses again.
            logger.info("job is held by another worker", metadata: ["holder": "\(holder)"])
        }
        return nil
    }

    /// Renews the lease: the queue's first, then PostgreSQL's, so PostgreSQL's never lapses
    /// before the queue's. Answers whether the attempt still holds the job; PostgreSQL's renewal
    /// gives up (`unavailable`) after `timeout`.
    public func renew(
        _ lease: JobLease, delivery: Delivery, consumer: String, extendBy: Duration, timeout: Duration,
        logger: Logger
    ) async throws(JobStoreError) -> LeaseState {
        if (try? await queue.heartbeat(delivery, consumer: consumer)) != true {
            logger.notice("the queue no longer holds this delivery; PostgreSQL's lease still fences the job")
        }
        return try await store.heartbeat(lease, extendBy: extendBy, timeout: timeout)
    }

    /// Whether the attempt still holds the job (cheap: no renewal).
    public func leaseState(_ lease: JobLease) async throws(JobStoreError) -> LeaseState {
        try await store.leaseState(lease)
    }

    /// Records how an attempt ended with a fenced transition, and only then acknowledges the
    /// delivery, hands it back, delays it or dead-letters it. A transition the fence refuses (the
    /// job was cancelled or taken over meanwhile) changes nothing and says so.
    public func recordOutcome(_ outcome: AttemptOutcome, lease: JobLease, delivery: Delivery, logger: Logger) async -> AttemptEnd {
        switch outcome {
        case .cancelled:
            logger.info("job ended cancelled")
            await afterTruth("acknowledge", logger: logger) { try await queue.acknowledge(delivery) }
            return .cancelled
        case .givenBack:
            let released = (try? await persisting(logger) { () throws(JobStoreError) in try await store.release(lease) }) ?? false
            logger.notice("shutdown: job given back", metadata: ["released": "\(released)"])
            if released { await afterTruth("hand back", logger: logger) { try await queue.retry(delivery, after: .zero) } }
            return .interrupted
        case .succeeded(let result):
            do {
                guard try await persisting(logger, { () throws(JobStoreError) in try await store.complete(lease, result: result) }) else {
                    return await refused(lease, delivery: delivery, logger: logger)
                }
                logger.info("job completed", metadata: ["result_key": "\(result.resultKey)"])
                await afterTruth("acknowledge", logger: logger) { try await queue.acknowledge(delivery) }
                return .completed
            } catch {
                logger.error("completion not recorded; the job will run again after its lease", metadata: ["error": "\(error)"])
                return .interrupted
            }
        case .failed(let failure, let delay):
            do {
                switch try await persisting(
                    logger,
                    { () throws(JobStoreError) in
                        try await store.fail(
                            lease, code: failure.code, message: failure.message, retryable: failure.retryable, retryDelay: delay,
                            diagnostics: failure.diagnostics, finalMessage: failure.finalMessage)
                    })
                {
                case .willRetry(let at):
                    logger.warning("attempt failed; retrying", metadata: ["error_code": "\(failure.code)", "retry_at": "\(at)"])
                    await afterTruth("delay the retry", logger: logger) { try await queue.retry(delivery, after: delay) }
                    return .retrying
                case .failed(let code):
                    logger.warning("job failed", metadata: ["error_code": "\(code)", "error": "\(failure.message)"])
                    // Out of attempts (a failure that may pass, on the last one): dead-lettered.
                    if code == ErrorCode.exhaustedRetries.rawValue || failure.retryable {
                        await deadLetter(delivery, logger: logger)
                    } else {
                        await afterTruth("acknowledge", logger: logger) { try await queue.acknowledge(delivery) }
                    }
                    return .failed
                case .refused:
                    return await refused(lease, delivery: delivery, logger: logger)
                }
            } catch {
                logger.error("failure not recorded; the job will run again after its lease", metadata: ["error": "\(error)"])
                return .interrupted
            }
        }
    }

    /// A fenced transition was refused: the job was cancelled (acknowledge), taken over (leave it),
    /// or completed by this very attempt (an earlier try landed and its answer went missing).
    private func refused(_ lease: JobLease, delivery: Delivery, logger: Logger) async -> AttemptEnd {
        let state = try? await store.leaseState(lease)
        logger.notice("outcome refused by the fence", metadata: ["state": "\(state.map { "\($0)" } ?? "unknown")"])
        switch state {
        case .cancelled?, .completed?:
            await afterTruth("acknowledge", logger: logger) { try await queue.acknowledge(delivery) }
            return state == .cancelled ? .cancelled : .completed
        case .lost?: return .superseded
        case .held?, nil: return .interrupted
        }
    }

    private func deadLetter(_ delivery: Delivery, logger: Logger) async {
        await afterTruth("dead-letter", logger: logger) {
            try await queue.acknowledge(delivery)
            try await queue.markDead(delivery.jobID)
        }
    }

    /// PostgreSQL calls whose loss would cost work: retried with backoff for up to 30 s while the
    /// database is unavailable (not once the calling task is cancelled: every call would fail at once).
    func persisting<T: Sendable>(_ logger: Logger, _ body: () async throws(JobStoreError) -> T) async throws(JobStoreError) -> T {
        try await Backoff.retrying(
            for: .seconds(30), first: .milliseconds(100), cap: .seconds(3), when: { $0.code == .unavailable },
            onRetry: { error, _ in logger.warning("database unavailable; retrying", metadata: ["error": "\(error)"]) },
            body)
    }
}
