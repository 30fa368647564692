import Foundation
import JobQueue
import Jobs
import MomentsModel
import ServiceTestSupport
import Testing
import Worker

@testable import JobStore

/// The worker loop against real PostgreSQL and Redis: the queue and the fence together.
@Suite("Worker, queue and fence together (real PostgreSQL and Redis)", .quiet)
struct QueueWorkerTests {
    /// Short times so that lapses and retries happen within a test.
    static func configuration(_ name: String, concurrency: Int = 2) -> WorkerConfiguration {
        WorkerConfiguration(
            name: name, concurrency: concurrency, lease: .milliseconds(1500), heartbeat: .milliseconds(400),
            cancelCheck: .milliseconds(200), takeoverGrace: .milliseconds(300), retryBase: .milliseconds(100),
            retryCap: .seconds(1), pollBlock: .milliseconds(300), reconcileInterval: .milliseconds(500),
            reconcileQuiet: .milliseconds(200), progressInterval: .milliseconds(100), shutdownGrace: .seconds(2))
    }

    /// Runs workers with `handler` while `body` runs.
    static func withWorkers(
        _ store: JobStore, _ queue: RedisQueue, count: Int = 1, handler: any JobHandler,
        configure: (inout WorkerConfiguration) -> Void = { _ in },
        _ body: @Sendable () async throws -> Void
    ) async throws {
        let workers = (0..<count).map {
            var configuration = configuration("w\($0)")
            configure(&configuration)
            return QueueWorker(configuration: configuration, jobs: jobs(store, queue), handler: handler, logger: TestServices.logger)
        }
        let tasks = workers.map { worker in Task { await worker.run() } }
        defer { tasks.forEach { $0.cancel() } }
        try await body()
        tasks.forEach { $0.cancel() }
        for task in tasks { await task.value }
    }

    static func jobs(_ store: JobStore, _ queue: RedisQueue) -> Jobs {
        Jobs(store: store, queue: queue, logger: TestServices.logger)
    }

    static func statuses(_ store: JobStore, _ ids: [UUID]) async throws -> [JobStatus] {
        var statuses: [JobStatus] = []
        for id in ids { statuses.append(try await store.job(id)?.status ?? .failed) }
        return statuses
    }

    @Test("Jobs run once each across several workers; completions are recorded once")
    func exactlyOnceInNormalOperation() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let handler = CountingHandler()
                let ids = try await TestServices.submitJobs(store, queue, count: 30)
                try await Self.withWorkers(store, queue, count: 3, handler: handler) {
                    let done = try await TestServices.eventually { try await Self.statuses(store, ids).allSatisfy { $0 == .completed } }
                    #expect(done)
                }
                #expect(await handler.runs(of: ids) == Array(repeating: 1, count: ids.count))
                for id in ids {
                    #expect(try await store.events(id).map(\.to) == [.pending, .processing, .completed])
                }
                #expect(try await queue.stats().inFlight == 0)
            }
        }
    }

    @Test("A retryable failure is retried with backoff; a permanent one fails at once; the last attempt dead-letters")
    func retries() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let flaky = try await TestServices.submitJobs(store, queue)[0]
                let broken = try await TestServices.submitJobs(store, queue)[0]
                let hopeless = try await TestServices.submitJobs(store, queue, maxAttempts: 2)[0]
                let handler = CountingHandler(failures: [
                    flaky: [JobFailure(code: "storage_error", message: "R2 timed out", retryable: true)],
                    broken: [JobFailure(MomentsError(.corruptMedia, "This file is damaged."))],
                    hopeless: Array(repeating: JobFailure(code: "io_error", message: "disk full", retryable: true), count: 5),
                ])
                try await Self.withWorkers(store, queue, handler: handler) {
                    let settled = try await TestServices.eventually {
                        try await Self.statuses(store, [flaky, broken, hopeless]) == [.completed, .failed, .failed]
                    }
                    #expect(settled)
                }
                #expect(await handler.runs(of: [flaky, broken, hopeless]) == [2, 1, 2])
                #expect(try await store.job(broken)?.errorCode == "corrupt_media")
                #expect(try await store.job(hopeless)?.errorCode == "exhausted_retries")
                let stats = try await queue.stats()
                #expect(stats.deadLettered == 1 && stats.inFlight == 0 && stats.delayed == 0)
                let retry = try await store.events(flaky)
                #expect(retry.map(\.to) == [.pending, .processing, .pending, .processing, .completed])
                // The second attempt started no sooner than the backoff allowed (base 100 ms, jitter ≥ 0.5).
                #expect(retry[3].at.timeIntervalSince(retry[2].at) >= 0.05)
            }
        }
    }

    @Test("Renewals follow the clock, not loop passes: PostgreSQL stalling 0.7 s of every 0.8 s does not let the lease lapse")
    func renewalsUnderSlowDatabase() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let id = try await TestServices.submitJobs(store, queue)[0]
                // Runs for 8 s; the lease is 1.5 s, renewed every 0.4 s.
                try await Self.withWorkers(store, queue, handler: CountingHandler(workFor: .seconds(8))) {
                    #expect(try await TestServices.eventually(timeout: .seconds(5)) { try await store.job(id)?.status == .processing })
                    let thief = Task {
                        // Another worker tries to take the job over whenever the table is free.
                        var taken = false
                        while !Task.isCancelled && !taken {
                            if case .claimed = try await store.claim(id, worker: "thief", lease: .seconds(60)) { taken = true }
                            try? await Task.sleep(for: .milliseconds(50))
                        }
                        return taken
                    }
                    // 5.6 s in which the jobs table is locked 0.7 s of every 0.8 s: each cancellation check
                    // waits, and a renewal may wait up to 0.7 s too (counted in loop passes, renewals
                    // came 1.8 s apart; by the clock, at most 1.1 s).
                    for _ in 0..<7 {
                        try await store.client.withTransaction(logger: TestServices.logger) { connection in
                            _ = try await connection.query("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE", logger: TestServices.logger)
                            try await Task.sleep(for: .milliseconds(700))
                        }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    thief.cancel()
                    #expect(try await !thief.value, "the lease lapsed while its worker was alive and renewing")
                    #expect(try await TestServices.eventually(timeout: .seconds(10)) { try await store.job(id)?.status == .completed })
                    #expect(try await store.job(id)?.attempt == 1)
                }
            }
        }
    }

    @Test(
        "PostgreSQL frozen mid-job (SIGSTOP): the work stops before another worker may take it over, not when TCP gives up; after SIGCONT it completes once"
    )
    func frozenDatabase() async throws {
        let postgres = try PrivatePostgres()
        defer { postgres.destroy() }
        let store = JobStore(configuration: try DatabaseConfiguration(url: postgres.url), logger: TestServices.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            try await TestServices.withQueue { queue in
                let id = try await TestServices.submitJobs(store, queue)[0]
                let handler = CountingHandler(workFor: .seconds(3))
                try await Self.withWorkers(store, queue, handler: handler) {
                    #expect(try await TestServices.eventually(timeout: .seconds(10)) { try await store.job(id)?.status == .processing })
                    try await Task.sleep(for: .milliseconds(500))
                    let frozenAt = ContinuousClock.now
                    postgres.freeze()
                    // Renewed at most `heartbeat` (0.4 s) before: the lease (1.5 s) lapses, and another
                    // worker may take the job, `takeoverGrace` (0.3 s) after that. On a busy machine a
                    // second more. Until this was fixed the renewal waited for an answer that never came.
                    let configuration = Self.configuration("w0")
                    let limit = configuration.lease + configuration.takeoverGrace + .seconds(1)
                    let stopped = try await TestServices.eventually(timeout: limit + .seconds(3)) { await handler.stopped.contains(id) }
                    let took = ContinuousClock.now - frozenAt
                    postgres.thaw()
                    #expect(stopped && took < limit, "the work stopped: \(stopped), \(took) after the freeze")
                    #expect(try await TestServices.eventually(timeout: .seconds(60)) { try await store.job(id)?.status == .completed })
                    let events = try await store.events(id)
                    #expect(events.filter { $0.to == .completed }.count == 1, "\(events)")
                    #expect(await handler.runs(of: [id]) == [2], "the stopped attempt, and the one that completed")
                }
            }
        }
    }

    @Test("The watchdog stops an attempt that stops reporting progress, and one that runs past the deadline it expected")
    func watchdog() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let stalled = try await TestServices.submitJobs(store, queue, maxAttempts: 1)[0]
                let overtime = try await TestServices.submitJobs(store, queue, maxAttempts: 1)[0]
                let handler = WatchdogHandler(stalls: stalled)
                try await Self.withWorkers(
                    store, queue, handler: handler,
                    configure: {
                        $0.concurrency = 2
                        $0.stallLimit = .seconds(1)
                        $0.deadlineFloor = .milliseconds(500)
                    }
                ) {
                    let ended = try await TestServices.eventually(timeout: .seconds(10)) {
                        try await Self.statuses(store, [stalled, overtime]).allSatisfy { $0 == .failed }
                    }
                    #expect(ended, "both attempts were stopped")
                    let first = try #require(try await store.job(stalled))
                    #expect(first.errorMessage?.contains("it made no progress for 1 seconds") == true, "\(first.errorMessage ?? "")")
                    let second = try #require(try await store.job(overtime))
                    #expect(
                        second.errorMessage?.contains("took far longer than a video of this length should") == true,
                        "\(second.errorMessage ?? "")")
                    #expect(await handler.stopped == [stalled, overtime], "both works saw their cancellation")
                }
            }
        }
    }

    @Test("Cancel: a pending job never starts; a running job is stopped within 2 s")
    func cancel() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let waiting = try await TestServices.submitJobs(store, queue)[0]
                #expect(try await store.cancel(waiting) == .cancelled(from: .pending))
                let handler = CountingHandler(workFor: .seconds(30))
                try await Self.withWorkers(store, queue, handler: handler) {
                    let running = try await TestServices.submitJobs(store, queue)[0]
                    #expect(try await TestServices.eventually { try await store.job(running)?.status == .processing })
                    let cancelledAt = ContinuousClock.now
                    #expect(try await store.cancel(running) == .cancelled(from: .processing))
                    #expect(try await TestServices.eventually(timeout: .seconds(2)) { await handler.stopped.contains(running) })
                    #expect(ContinuousClock.now - cancelledAt < .seconds(2))
                    #expect(try await TestServices.eventually { try await queue.stats().inFlight == 0 })
                    #expect(try await store.job(running)?.status == .cancelled)
                }
                #expect(await handler.runs(of: [waiting]) == [0], "the cancelled pending job never started")
            }
        }
    }

    /// Cancels its own job at the very end of the work, as a user would by tapping cancel just then,
    /// and records what it is asked to discard.
    final class CancelledAtTheEnd: JobHandler, @unchecked Sendable {
        let store: JobStore
        private let lock = NSLock()
        private var discardedKeys: [String] = []
        var discarded: [String] { lock.withLock { discardedKeys } }

        init(store: JobStore) { self.store = store }

        func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
            _ = try await store.cancel(job.id)
            return JobResult(resultKey: "results/\(job.id).mp4", resultSize: 1)
        }

        func discard(_ result: JobResult) async {
            lock.withLock { discardedKeys.append(result.resultKey) }
        }
    }

    @Test("Work that finishes just as its job is cancelled is discarded, not completed")
    func cancelledAsItFinished() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let handler = CancelledAtTheEnd(store: store)
                let id = try await TestServices.submitJobs(store, queue)[0]
                try await Self.withWorkers(store, queue, handler: handler) {
                    let discarded = try await TestServices.eventually { handler.discarded == ["results/\(id).mp4"] }
                    #expect(discarded, "\(handler.discarded)")
                }
                #expect(try await store.job(id)?.status == .cancelled)
                #expect(try await store.job(id)?.resultKey == nil)
            }
        }
    }

    @Test("Redis flushed: the reconciler restores every pending job and a lost enqueue, and they all complete")
    func reconcilerAfterFlush() async throws {
        try await TestServices.withDatabase { store, _ in
            // Database 7 of Redis is this test's alone: it flushes it.
            try await TestServices.withQueue(database: 7) { queue in
                let ids = try await TestServices.submitJobs(store, queue, count: 20)
                let unqueued = try await store.create(NewJob(sourceKey: "sources/lost-push.mp4")).id  // INSERT done, push lost
                try await TestServices.flushRedis(database: 7)
                #expect(try await queue.stats().ready == 0)
                try await Task.sleep(for: .milliseconds(250))  // past the reconciler's quiet time
                let report = try #require(try await Self.jobs(store, queue).reconcile(quiet: .milliseconds(200)))
                #expect(report.restoredPending == 21)
                #expect(try await queue.stats().ready == 21)
                try await Self.withWorkers(store, queue, count: 2, handler: CountingHandler()) {
                    let done = try await TestServices.eventually {
                        try await Self.statuses(store, ids + [unqueued]).allSatisfy { $0 == .completed }
                    }
                    #expect(done)
                }
            }
        }
    }

    @Test("Paused, then Redis loses everything: no job is claimed (PostgreSQL keeps the pause and gives it back); resumed, the jobs complete")
    func pauseOutlivesRedis() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let jobs = Self.jobs(store, queue)
                try await jobs.pause()
                let ids = try await TestServices.submitJobs(store, queue, count: 2)
                let handler = CountingHandler()
                try await Self.withWorkers(store, queue, handler: handler, configure: { $0.pausedCheck = .milliseconds(100) }) {
                    // Redis restarted empty (FLUSHALL, for this queue's keys): no pause, no jobs. The
                    // reconciler (every 0.5 s here) puts the pending jobs back.
                    try await queue.destroy()
                    try await Task.sleep(for: .seconds(3))
                    #expect(await handler.runs(of: ids) == [0, 0], "nothing claimed while paused")
                    #expect(try await Self.statuses(store, ids) == [.pending, .pending])
                    #expect(try await queue.pausedState() == true, "the queue has the pause back")
                    #expect(try await queue.contains(ids) == [true, true], "and the jobs")
                    try await jobs.resume()
                    #expect(
                        try await TestServices.eventually(timeout: .seconds(10)) { try await Self.statuses(store, ids) == [.completed, .completed] })
                }
            }
        }
    }

    @Test("Only one reconciler runs at a time across processes")
    func reconcilerIsExclusive() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let gate = AsyncGate()
                let first = Task {
                    try await store.exclusively("moments.reconciler") {
                        await gate.wait(); return 1
                    }
                }
                try await Task.sleep(for: .milliseconds(300))
                let second = try await Self.jobs(store, queue).reconcile()
                #expect(second == nil, "the second reconciler stood aside")
                await gate.open()
                #expect(try await first.value == 1)
            }
        }
    }

    @Test("Shutdown: a running job gets its grace period, then its lease is given back and another worker starts it at once")
    func shutdownGivesLeasesBack() async throws {
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let handler = CountingHandler(workFor: .seconds(30))
                var leaving = Self.configuration("leaving", concurrency: 1)
                leaving.shutdownGrace = .milliseconds(300)
                let first = QueueWorker(configuration: leaving, jobs: Self.jobs(store, queue), handler: handler, logger: TestServices.logger)
                let firstTask = Task { await first.run() }
                let id = try await TestServices.submitJobs(store, queue)[0]
                let started = try await TestServices.eventually { try await store.job(id)?.status == .processing }
                #expect(started)
                firstTask.cancel()  // what SIGTERM does
                await firstTask.value
                #expect(try await store.job(id)?.status == .pending)
                try await Self.withWorkers(store, queue, handler: handler) {
                    let taken = try await TestServices.eventually(timeout: .seconds(3)) { try await store.job(id)?.status == .processing }
                    #expect(taken, "picked up without waiting for a lease to lapse")
                }
                let events = try await store.events(id)
                try #require(Array(events.map(\.to).prefix(4)) == [.pending, .processing, .pending, .processing], "\(events)")
                #expect(events[2].detail?.contains("given back") == true && events[2].worker == "leaving")
                #expect(events[3].worker == "w0" && events[3].attempt == 2)
            }
        }
    }

}

/// Counts runs per job, can fail chosen attempts, and can work for a long time (until cancelled).
actor CountingHandler: JobHandler {
    private var counts: [UUID: Int] = [:]
    private var failures: [UUID: [JobFailure]]
    private(set) var stopped: Set<UUID> = []
    let workFor: Duration

    init(failures: [UUID: [JobFailure]] = [:], workFor: Duration = .milliseconds(20)) {
        self.failures = failures
        self.workFor = workFor
    }

    nonisolated func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        let failure = await start(job.id)
        await context.progress(50, stage: "working", message: "Working")
        do {
            try await Task.sleep(for: workFor)
        } catch {
            await stop(job.id)
            throw error
        }
        if let failure { throw failure }
        return JobResult(resultKey: "results/\(job.id).mp4", resultSize: 1)
    }

    private func start(_ id: UUID) -> JobFailure? {
        counts[id, default: 0] += 1
        return failures[id]?.isEmpty == false ? failures[id]!.removeFirst() : nil
    }

    private func stop(_ id: UUID) { stopped.insert(id) }

    func runs(of ids: [UUID]) -> [Int] { ids.map { counts[$0] ?? 0 } }
}

actor AsyncGate {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters = []
    }
}

/// Work the watchdog must stop: `stalls` reports once and then nothing; any other job says it
/// expects 100 ms and then reports progress forever.
actor WatchdogHandler: JobHandler {
    let stalls: UUID
    private(set) var stopped: Set<UUID> = []

    init(stalls: UUID) { self.stalls = stalls }

    nonisolated func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        await context.progress(10, stage: "working", message: "Working")
        if job.id != stalls { context.expect(.milliseconds(100)) }
        do {
            while true {
                try await Task.sleep(for: .milliseconds(100))
                if job.id != stalls { await context.progress(20, stage: "working", message: "Still working") }
            }
        } catch {
            await stop(job.id)
            throw error
        }
    }

    private func stop(_ id: UUID) { stopped.insert(id) }
}
