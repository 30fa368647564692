import Foundation
import JobStore
import Jobs
import Logging
import MomentsModel
import MomentsSupport
import Synchronization
import Tracing

/// Takes jobs from the queue and runs them with a `JobHandler`, `concurrency` at a time.
///
/// For each delivery: claim the job (a new attempt, the fencing token), run the handler while a
/// keeper renews the lease and watches for cancellation, then record the outcome (`Jobs` writes
/// it with a fenced transition and only then acknowledges the delivery). A crash anywhere leaves
/// the delivery unacknowledged, so the job comes back once its lease lapses. While the queue is
/// paused no slot takes a new job.
public final class QueueWorker: Sendable {
    public let configuration: WorkerConfiguration
    let jobs: Jobs
    let handler: any JobHandler
    let logger: Logger
    let metrics: WorkerMetrics?
    /// Jobs running now, and attempts finished since start (for the registry).
    private let counts = Mutex<(running: Int, finished: Int64)>((0, 0))

    public init(configuration: WorkerConfiguration, jobs: Jobs, handler: any JobHandler, metrics: WorkerMetrics? = nil, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.jobs = jobs
        self.handler = handler
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.name)"
        self.logger = logger
    }

    /// Works until the calling task is cancelled; then stops taking jobs and gives running ones
    /// `shutdownGrace` to finish before handing their leases back.
    public func run() async {
        logger.info("worker started", metadata: ["concurrency": "\(configuration.concurrency)"])
        await withTaskGroup(of: Void.self) { group in
            for slot in 0..<configuration.concurrency {
                group.addTask { await self.slotLoop(slot) }
            }
            group.addTask { await self.maintenanceLoop() }
            group.addTask { await self.registryLoop() }
        }
        // Recorded even though this task is cancelled (a cancelled task's database calls give up at once).
        let finished = counts.withLock { $0.finished }
        await Task { [jobs, configuration, logger] in
            do {
                try await jobs.workerStopped(configuration.name, finished: finished)
            } catch {
                logger.notice("clean stop not recorded in the registry", metadata: ["error": "\(error)"])
            }
        }.value
        logger.info("worker stopped")
    }

    /// Registers this worker and sends its heartbeat (jobs running, attempts finished) every
    /// `registryHeartbeat`, registering again after any failure (the row may have been pruned).
    private func registryLoop() async {
        let identity = WorkerIdentity(
            id: configuration.name, host: ProcessInfo.processInfo.hostName,
            pid: Int(ProcessInfo.processInfo.processIdentifier), version: MomentsVersion.current,
            concurrency: configuration.concurrency)
        var registered = false
        while !Task.isCancelled {
            do {
                let (running, finished) = counts.withLock { ($0.running, $0.finished) }
                if registered {
                    registered = try await jobs.workerHeartbeat(identity.id, running: running, finished: finished)
                }
                if !registered {
                    try await jobs.registerWorker(identity)
                    registered = true
                }
            } catch {
                if Task.isCancelled { break }
                registered = false
                logger.notice("registry heartbeat failed; registering again", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: configuration.registryHeartbeat)
        }
    }

    // MARK: Slots

    private func slotLoop(_ slot: Int) async {
        let consumer = jobs.consumer(named: "\(configuration.name)/\(slot)")
        defer { consumer.close() }
        var backoff = Backoff(first: .milliseconds(100), cap: .seconds(5))
        var lastLapsedCheck = ContinuousClock.now - .seconds(60)
        while !Task.isCancelled {
            do {
                if try await jobs.isPaused() {
                    try? await Task.sleep(for: configuration.pausedCheck)
                    continue
                }
                // Lapsed leases first (a dead worker's job has waited longest), looked for at most
                // once a second: leases last tens of seconds, so checking before every read would
                // only cost a round trip per job.
                let minIdle = configuration.lease + configuration.takeoverGrace
                var delivery: Delivery?
                if ContinuousClock.now - lastLapsedCheck >= .seconds(1) {
                    lastLapsedCheck = .now
                    delivery = try await consumer.claimLapsed(minIdle: minIdle)
                }
                if delivery == nil {
                    delivery = try await consumer.next(block: configuration.pollBlock)
                }
                backoff.reset()
                // Paused while this slot was waiting in a blocking read: the job goes back, untouched.
                if let delivery, try await jobs.isPaused() {
                    try await jobs.putBack(delivery)
                    continue
                }
                if let delivery { await handle(delivery, consumer: consumer.name) }
            } catch {
                if Task.isCancelled { break }
                let delay = backoff.advance()
                logger.warning("queue unavailable; backing off", metadata: ["error": "\(error)", "delay": "\(delay)"])
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// Promotes due retries every second; tries to run the reconciler every `reconcileInterval`.
    private func maintenanceLoop() async {
        var sinceReconcile = configuration.reconcileInterval  // reconcile soon after start
        while !Task.isCancelled {
            do {
                try await jobs.promoteDueRetries()
                if sinceReconcile >= configuration.reconcileInterval {
                    sinceReconcile = .zero
                    _ = try await jobs.reconcile(quiet: configuration.reconcileQuiet, grace: configuration.takeoverGrace)
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("maintenance failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
            sinceReconcile += .seconds(1)
        }
    }

    // MARK: One delivery

    /// What stopped an attempt early, the first reason only: shared by the tasks that watch it.
    final class Interrupted: Sendable {
        let reason = Mutex<Interruption?>(nil)
    }

    /// Why a running job stopped early.
    enum Interruption: Sendable, Equatable {
        case cancelled, lost, shutdown
        /// The watchdog stopped it: no progress for too long, or past its deadline.
        case overdue(ErrorCode)

        /// Work that finished anyway (as the shutdown grace ran out, or as the watchdog fired)
        /// keeps its result; a cancelled or lost attempt's result is not its own to record.
        var keepsFinishedWork: Bool {
            switch self {
            case .shutdown, .overdue: true
            case .cancelled, .lost: false
            }
        }
    }

    func handle(_ delivery: Delivery, consumer: String) async {
        var logger = self.logger
        logger[metadataKey: "job_id"] = "\(delivery.jobID.uuidString.lowercased())"
        guard let (lease, job) = await jobs.claim(delivery, worker: configuration.name, lease: configuration.lease, logger: logger) else { return }
        logger[metadataKey: "attempt"] = "\(lease.attempt)"
        counts.withLock { $0.running += 1 }
        // One span per attempt, in the trace the job was submitted in; the handler's stages and
        // every log line of the attempt (trace_id, span_id) fall under it.
        let span = startSpan("job attempt", context: JobTrace.context(of: job), ofKind: .consumer)
        span.updateAttributes { attributes in
            JobTrace.describe(job, in: &attributes)  // the claimed row: its attempt is the lease's
            attributes["moments.worker"] = configuration.name
        }
        let ended = await ServiceContext.$current.withValue(span.context) {
            await run(job, lease: lease, delivery: delivery, consumer: consumer, logger: logger)
        }
        span.attributes["moments.attempt.outcome"] = ended.rawValue
        if ended == .failed || ended == .retrying { span.setStatus(SpanStatus(code: .error, message: "the attempt \(ended.rawValue)")) }
        span.end()
        counts.withLock {
            $0.running -= 1
            $0.finished += 1
        }
    }

    private func run(_ job: JobRecord, lease: JobLease, delivery: Delivery, consumer: String, logger: Logger) async -> AttemptEnd {
        logger.info("job started", metadata: ["attempt": "\(lease.attempt)", "max_attempts": "\(job.maxAttempts)"])
        let context = JobContext(lease: lease, jobs: jobs, logger: logger, progressInterval: configuration.progressInterval)
        let interruption = Interrupted()
        let handler = self.handler
        let started = ContinuousClock.now
        // Unstructured, so that shutdown (cancelling this task) does not cancel the job at once.
        let work = Task { try await handler.process(job, context: context) }
        let keeper = Task {
            await self.keepLease(
                lease, delivery: delivery, consumer: consumer, work: work, context: context, started: started,
                interruption: interruption, logger: logger)
        }
        let grace = configuration.shutdownGrace
        let outcome = await withTaskCancellationHandler {
            await work.result
        } onCancel: {
            Task {
                try? await Task.sleep(for: grace)
                interruption.reason.withLock { if $0 == nil { $0 = .shutdown } }
                work.cancel()
            }
        }
        keeper.cancel()
        var stoppedBy = interruption.reason.withLock { $0 }
        if stoppedBy?.keepsFinishedWork == true, case .success = outcome { stoppedBy = nil }
        // Recording the outcome must happen even when this task is being cancelled (shutdown):
        // database and Redis calls made from a cancelled task give up at once.
        let recorded = stoppedBy
        let ended = await Task { await self.finish(outcome, interruption: recorded, lease: lease, delivery: delivery, logger: logger) }.value
        if ended == .completed { await letGo(of: job, logger: logger) }
        let seconds = (ContinuousClock.now - started).inSeconds
        metrics?.record(ended, seconds: seconds, sourceDuration: try? outcome.get().sourceDuration)
        return ended
    }

    /// Keeps the lease while the work runs: renewals on their own schedule, and a cancellation
    /// check every `cancelCheck`, apart, so that a slow check never delays a renewal. Stops the
    /// work when the job is cancelled or the lease is lost.
    private func keepLease(
        _ lease: JobLease, delivery: Delivery, consumer: String, work: Task<JobResult, any Error>,
        context: JobContext, started: ContinuousClock.Instant, interruption: Interrupted,
        logger: Logger
    ) async {
        let stop: @Sendable (Interruption) -> Void = { reason in
            interruption.reason.withLock { if $0 == nil { $0 = reason } }
            work.cancel()
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.renew(lease, delivery: delivery, consumer: consumer, stop: stop, logger: logger) }
            group.addTask { await self.watch(lease, stop: stop, logger: logger) }
            group.addTask { await self.watchdog(context, started: started, stop: stop, logger: logger) }
            await group.next()  // one of them stopped the work: the others have nothing left to watch
            group.cancelAll()
        }
    }

    /// Renews the lease once `heartbeat` has passed by the clock since the last renewal that held
    /// (not by counting loop passes: a slow PostgreSQL must not stretch the interval). A renewal
    /// that fails is tried again a second later; once the lease may have lapsed the work stops.
    /// Each renewal gives up when the lease it renews would lapse (at most the store's 10 s), so a
    /// database that goes silent stops the work by then, before another worker may take it over.
    private func renew(
        _ lease: JobLease, delivery: Delivery, consumer: String, stop: @Sendable (Interruption) -> Void,
        logger: Logger
    ) async {
        // Measured from when each renewal was sent: the database starts the new lease later than that.
        var lastRenewal = ContinuousClock.now
        var next = lastRenewal + configuration.heartbeat
        while !Task.isCancelled {
            do { try await Task.sleep(until: next, clock: .continuous) } catch { return }
            let sent = ContinuousClock.now
            do {
                let left = lastRenewal + configuration.lease - sent
                let state = try await jobs.renew(
                    lease, delivery: delivery, consumer: consumer, extendBy: configuration.lease,
                    timeout: min(max(left, .milliseconds(100)), .seconds(10)), logger: logger)
                guard Self.holds(state, stop: stop, logger: logger) else { return }
                lastRenewal = sent
                next = sent + configuration.heartbeat
            } catch {
                if ContinuousClock.now - lastRenewal >= configuration.lease {
                    logger.warning("lease could not be renewed in time; stopping", metadata: ["error": "\(error)"])
                    return stop(.lost)
                }
                logger.notice("lease not renewed; trying again", metadata: ["error": "\(error)"])
                next = ContinuousClock.now + min(configuration.heartbeat, .seconds(1))
            }
        }
    }

    /// Reads the lease every `cancelCheck` (a cheap read): a cancelled or taken-over job stops at once.
    private func watch(_ lease: JobLease, stop: @Sendable (Interruption) -> Void, logger: Logger) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.cancelCheck) } catch { return }
            // Unreadable (PostgreSQL away): the renewals decide when that has lasted too long.
            guard let state = try? await jobs.leaseState(lease) else { continue }
            guard Self.holds(state, stop: stop, logger: logger) else { return }
        }
    }

    /// True while the lease is held; otherwise stops the work, cancelled or lost, and says so.
    private static func holds(_ state: LeaseState, stop: @Sendable (Interruption) -> Void, logger: Logger) -> Bool {
        switch state {
        case .held:
            return true
        case .cancelled:
            logger.info("job cancelled; stopping")
            stop(.cancelled)
        case .lost, .completed:
            logger.warning("lease lost to another attempt; stopping")
            stop(.lost)
        }
        return false
    }

    /// Stops an attempt that reports no progress for `stallLimit`, or runs past its deadline (a
    /// multiple of what it said it expects, never more than `attemptLimit`).
    private func watchdog(
        _ context: JobContext, started: ContinuousClock.Instant, stop: @Sendable (Interruption) -> Void,
        logger: Logger
    ) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.cancelCheck) } catch { return }
            if let code = context.overdue(started: started, configuration: configuration) {
                logger.warning(
                    code == .attemptStalled ? "no progress; stopping the attempt" : "past its deadline; stopping the attempt",
                    metadata: ["error_code": "\(code.rawValue)"])
                return stop(.overdue(code))
            }
        }
    }

    /// After a recorded success: the handler lets go of what only the work needed (the highlight
    /// handler deletes the source when so configured), and a deleted source is recorded.
    private func letGo(of job: JobRecord, logger: Logger) async {
        guard await handler.completed(job) else { return }
        do {
            _ = try await jobs.sourceDeleted(job.id)
        } catch {
            logger.warning("deleted source not recorded", metadata: ["error": "\(error)"])
        }
    }

    /// Records the attempt's outcome and answers how it ended, for the metrics.
    private func finish(
        _ outcome: Result<JobResult, any Error>, interruption: Interruption?, lease: JobLease,
        delivery: Delivery, logger: Logger
    ) async -> AttemptEnd {
        let attempt: AttemptOutcome
        switch (interruption, outcome) {
        case (.cancelled, _): attempt = .cancelled
        case (.lost, .failure): return .interrupted  // Not ours any more: the delivery belongs to whoever took over.
        case (.lost, .success(let result)):
            // What this attempt stored is deleted only when the store confirms the attempt lost; a
            // store that cannot answer proves nothing (the retention sweep finds true orphans).
            guard (try? await jobs.leaseState(lease)) == .lost else { return .interrupted }
            await handler.discard(result)
            return .superseded
        case (.shutdown, _): attempt = .givenBack
        case (.overdue(let code), _):
            let message =
                code == .attemptStalled
                ? "The worker stopped this attempt: it made no progress for \(Int(configuration.stallLimit.inSeconds)) seconds."
                : "The worker stopped this attempt: it took far longer than a video of this length should."
            attempt = .failed(
                JobFailure(code: code.rawValue, message: message, retryable: true),
                retryDelay: configuration.retryDelay(afterAttempt: lease.attempt))
        case (nil, .success(let result)): attempt = .succeeded(result)
        case (nil, .failure(let error)):
            attempt = .failed(JobFailure(describing: error), retryDelay: configuration.retryDelay(afterAttempt: lease.attempt))
        }
        let ended = await jobs.recordOutcome(attempt, lease: lease, delivery: delivery, logger: logger)
        // Done just as it was cancelled, cancelled while completing, or taken over: keep nothing.
        if ended == .cancelled || ended == .superseded, case .success(let result) = outcome { await handler.discard(result) }
        return ended
    }
}
