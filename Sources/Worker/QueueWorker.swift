import Foundation
import JobQueue
import JobStore
import Logging
import MomentsModel

/// Takes jobs from the queue and runs them with a `JobHandler`, `concurrency` at a time.
///
/// For each delivery: claim the job in PostgreSQL (a new attempt, the fencing token), run the
/// handler while a keeper renews the lease and watches for cancellation, then record the outcome
/// with a fenced transition and only then acknowledge the delivery in Redis. A crash anywhere leaves
/// the delivery unacknowledged, so the job comes back once its lease lapses.
public final class QueueWorker: Sendable {
    public let configuration: WorkerConfiguration
    let store: JobStore
    let queue: RedisQueue
    let handler: any JobHandler
    let logger: Logger
    let metrics: WorkerMetrics?

    public init(configuration: WorkerConfiguration, store: JobStore, queue: RedisQueue, handler: any JobHandler,
                metrics: WorkerMetrics? = nil, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.store = store
        self.queue = queue
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
        }
        logger.info("worker stopped")
    }

    // MARK: Slots

    private func slotLoop(_ slot: Int) async {
        let consumer = queue.consumer(named: "\(configuration.name)/\(slot)")
        defer { consumer.close() }
        var backoff = Duration.milliseconds(100)
        var lastLapsedCheck = ContinuousClock.now - .seconds(60)
        while !Task.isCancelled {
            do {
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
                backoff = .milliseconds(100)
                if let delivery { await handle(delivery, consumer: consumer.name) }
            } catch {
                if Task.isCancelled { break }
                logger.warning("queue unavailable; backing off", metadata: ["error": "\(error)", "delay": "\(backoff)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Promotes due retries every second; tries to run the reconciler every `reconcileInterval`.
    private func maintenanceLoop() async {
        let reconciler = Reconciler(store: store, queue: queue, quiet: configuration.reconcileQuiet, logger: logger)
        var sinceReconcile = configuration.reconcileInterval  // reconcile soon after start
        while !Task.isCancelled {
            do {
                try await queue.promoteDue()
                if sinceReconcile >= configuration.reconcileInterval {
                    sinceReconcile = .zero
                    _ = try await reconciler.runOnce()
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

    /// Why a running job stopped early.
    enum Interruption: Sendable {
        case cancelled, lost, shutdown
    }

    func handle(_ delivery: Delivery, consumer: String) async {
        var logger = self.logger
        logger[metadataKey: "job_id"] = "\(delivery.jobID.uuidString.lowercased())"
        let claim: ClaimResult
        do {
            claim = try await persist(logger) { () throws(JobStoreError) in
                try await self.store.claim(delivery.jobID, worker: self.configuration.name, lease: self.configuration.lease)
            }
        } catch {
            logger.error("could not claim; the delivery stays and comes back after the lease", metadata: ["error": "\(error)"])
            return
        }
        switch claim {
        case .claimed(let lease, let job):
            logger[metadataKey: "attempt"] = "\(lease.attempt)"
            await run(job, lease: lease, delivery: delivery, consumer: consumer, logger: logger)
        case .finished, .notFound:
            await redis(logger) { () throws(RedisError) in try await self.queue.acknowledge(delivery) }
        case .exhausted:
            logger.warning("dead-lettered: no attempts left")
            await redis(logger) { () throws(RedisError) in
                try await self.queue.acknowledge(delivery)
                try await self.queue.markDead(delivery.jobID)
            }
        case .notYet(let runAfter):
            let wait = Duration.milliseconds(Int(max(0, runAfter.timeIntervalSinceNow) * 1000))
            await redis(logger) { () throws(RedisError) in try await self.queue.retry(delivery, after: wait) }
        case .heldByAnother(let worker, _):
            // Leave the delivery: if that worker finishes it is acknowledged, if it dies it lapses again.
            logger.info("job is held by another worker", metadata: ["holder": "\(worker)"])
        }
    }

    private func run(_ job: JobRecord, lease: JobLease, delivery: Delivery, consumer: String, logger: Logger) async {
        logger.info("job started", metadata: ["attempt": "\(lease.attempt)", "max_attempts": "\(job.maxAttempts)"])
        let context = JobContext(lease: lease, store: store, logger: logger, progressInterval: configuration.progressInterval)
        let interruption = LockedState<Interruption?>(nil)
        let handler = self.handler
        let started = ContinuousClock.now
        // Unstructured, so that shutdown (cancelling this task) does not cancel the job at once.
        let work = Task { try await handler.process(job, context: context) }
        let keeper = Task { await self.keepLease(lease, delivery: delivery, consumer: consumer, work: work, interruption: interruption, logger: logger) }
        let grace = configuration.shutdownGrace
        let outcome = await withTaskCancellationHandler {
            await work.result
        } onCancel: {
            Task {
                try? await Task.sleep(for: grace)
                interruption.withLock { if $0 == nil { $0 = .shutdown } }
                work.cancel()
            }
        }
        keeper.cancel()
        var stoppedBy = interruption.withLock { $0 }
        if stoppedBy == .shutdown, case .success = outcome { stoppedBy = nil }  // it finished as the grace ran out: keep the result
        // Recording the outcome must happen even when this task is being cancelled (shutdown):
        // database and Redis calls made from a cancelled task give up at once.
        let recorded = stoppedBy
        let ended = await Task { await self.finish(outcome, interruption: recorded, lease: lease, delivery: delivery, logger: logger) }.value
        if ended == .completed { await letGo(of: job, logger: logger) }
        let seconds = (ContinuousClock.now - started).inSeconds
        metrics?.record(ended, seconds: seconds, sourceDuration: try? outcome.get().sourceDuration)
    }

    /// Renews the lease every `heartbeat` and checks for cancellation every `cancelCheck`; stops the
    /// work when the job is cancelled or the lease is lost.
    private func keepLease(_ lease: JobLease, delivery: Delivery, consumer: String, work: Task<JobResult, any Error>,
                           interruption: LockedState<Interruption?>, logger: Logger) async {
        var sinceHeartbeat = Duration.zero
        var lastRenewal = ContinuousClock.now
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.cancelCheck) } catch { return }
            sinceHeartbeat += configuration.cancelCheck
            let state: LeaseState
            do {
                if sinceHeartbeat >= configuration.heartbeat {
                    sinceHeartbeat = .zero
                    // Redis first, then PostgreSQL, so PostgreSQL's lease never lapses before Redis's.
                    if (try? await queue.heartbeat(delivery, consumer: consumer)) != true {
                        logger.notice("redis no longer holds this delivery; PostgreSQL's lease still fences the job")
                    }
                    state = try await store.heartbeat(lease, extendBy: configuration.lease)
                    if state == .held { lastRenewal = .now }
                } else {
                    state = try await store.leaseState(lease)
                }
            } catch {
                // PostgreSQL away: keep working while the lease can still be ours.
                if ContinuousClock.now - lastRenewal < configuration.lease { continue }
                logger.warning("lease could not be renewed in time; stopping", metadata: ["error": "\(error)"])
                interruption.withLock { if $0 == nil { $0 = .lost } }
                work.cancel()
                return
            }
            switch state {
            case .held: continue
            case .cancelled:
                logger.info("job cancelled; stopping")
                interruption.withLock { if $0 == nil { $0 = .cancelled } }
                work.cancel()
                return
            case .lost:
                logger.warning("lease lost to another attempt; stopping")
                interruption.withLock { if $0 == nil { $0 = .lost } }
                work.cancel()
                return
            }
        }
    }

    /// After a recorded success: the handler lets go of what only the work needed (the highlight
    /// handler deletes the source when so configured), and a deleted source is recorded.
    private func letGo(of job: JobRecord, logger: Logger) async {
        guard await handler.completed(job) else { return }
        do {
            _ = try await store.markSourceDeleted(job.id)
        } catch {
            logger.warning("deleted source not recorded", metadata: ["error": "\(error)"])
        }
    }

    /// Records the attempt's outcome and answers how it ended, for the metrics.
    private func finish(_ outcome: Result<JobResult, any Error>, interruption: Interruption?, lease: JobLease,
                        delivery: Delivery, logger: Logger) async -> WorkerMetrics.Outcome {
        switch (interruption, outcome) {
        case (.cancelled, let outcome):
            logger.info("job ended cancelled")
            if case .success(let result) = outcome { await handler.discard(result) }  // done just as it was cancelled
            await redis(logger) { () throws(RedisError) in try await self.queue.acknowledge(delivery) }
            return .cancelled
        case (.lost, _):
            return .interrupted  // Not ours any more: the delivery belongs to whoever took over.
        case (.shutdown, _):
            let released = (try? await persist(logger) { () throws(JobStoreError) in try await self.store.release(lease) }) ?? false
            logger.notice("shutdown: job given back", metadata: ["released": "\(released)"])
            if released { await redis(logger) { () throws(RedisError) in try await self.queue.retry(delivery, after: .zero) } }
            return .interrupted
        case (nil, .success(let result)):
            do {
                let done = try await persist(logger) { () throws(JobStoreError) in try await self.store.complete(lease, result: result) }
                if done {
                    logger.info("job completed", metadata: ["result_key": "\(result.resultKey)"])
                    await redis(logger) { () throws(RedisError) in try await self.queue.acknowledge(delivery) }
                    return .completed
                }
                let ended = await refused(lease, delivery: delivery, logger: logger)
                if ended == .cancelled { await handler.discard(result) }  // cancelled while completing: keep nothing
                return ended
            } catch {
                logger.error("completion not recorded; the job will run again after its lease", metadata: ["error": "\(error)"])
                return .interrupted
            }
        case (nil, .failure(let error)):
            let failure = Self.failure(error)
            let delay = configuration.retryDelay(afterAttempt: lease.attempt)
            do {
                let result = try await persist(logger) { () throws(JobStoreError) in
                    try await self.store.fail(lease, code: failure.code, message: failure.message, retryable: failure.retryable, retryDelay: delay)
                }
                switch result {
                case .willRetry(let at):
                    logger.warning("attempt failed; retrying", metadata: ["error_code": "\(failure.code)", "retry_at": "\(at)"])
                    await redis(logger) { () throws(RedisError) in try await self.queue.retry(delivery, after: delay) }
                    return .retrying
                case .failed(let code):
                    logger.warning("job failed", metadata: ["error_code": "\(code)", "error": "\(failure.message)"])
                    await redis(logger) { () throws(RedisError) in
                        try await self.queue.acknowledge(delivery)
                        if code == ErrorCode.exhaustedRetries.rawValue { try await self.queue.markDead(delivery.jobID) }
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

    /// A fenced transition was refused: the job was cancelled (acknowledge) or taken over (leave it).
    private func refused(_ lease: JobLease, delivery: Delivery, logger: Logger) async -> WorkerMetrics.Outcome {
        let state = try? await store.leaseState(lease)
        logger.notice("outcome refused by the fence", metadata: ["state": "\(state.map { "\($0)" } ?? "unknown")"])
        guard state == .cancelled else { return .interrupted }
        await redis(logger) { () throws(RedisError) in try await self.queue.acknowledge(delivery) }
        return .cancelled
    }

    static func failure(_ error: any Error) -> JobFailure {
        switch error {
        case let failure as JobFailure: failure
        case let error as MomentsError: JobFailure(error)
        case is CancellationError: JobFailure(code: ErrorCode.internalError.rawValue, message: "The job stopped unexpectedly.", retryable: true)
        default: JobFailure(code: ErrorCode.internalError.rawValue, message: "Something went wrong on our side. Please try again.", retryable: true)
        }
    }

    // MARK: Retrying the stores

    /// PostgreSQL calls whose loss would cost work: retried with backoff for up to 30 s, unless the
    /// calling task was cancelled (then every call fails at once and retrying would only spin).
    private func persist<T: Sendable>(_ logger: Logger, _ body: () async throws(JobStoreError) -> T) async throws(JobStoreError) -> T {
        var delay = Duration.milliseconds(100)
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await body()
            } catch where error.code == .unavailable && !Task.isCancelled && ContinuousClock.now + delay < deadline {
                logger.warning("database unavailable; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(3))
            }
        }
    }

    /// Redis bookkeeping after PostgreSQL has recorded the truth. If it fails, the reconciler and
    /// lapsed-lease claims repair it later, so it is logged, not thrown.
    private func redis(_ logger: Logger, _ body: () async throws(RedisError) -> Void) async {
        do {
            try await body()
        } catch {
            logger.warning("queue bookkeeping failed; the reconciler will repair it", metadata: ["error": "\(error)"])
        }
    }
}
