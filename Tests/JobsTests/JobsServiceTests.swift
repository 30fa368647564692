import Foundation
import JobStore
import MomentsModel
import ServiceTestSupport
import Testing
import Worker

@testable import Jobs

/// The job service over real PostgreSQL and the in-memory queue: PostgreSQL first, the queue after.
@Suite("Jobs service (real PostgreSQL, in-memory queue)", .quiet)
struct JobsServiceTests {
    static func withJobs(_ body: @Sendable (Jobs, MemoryQueue) async throws -> Void) async throws {
        try await TestServices.withDatabase { store, _ in
            let queue = MemoryQueue()
            try await body(Jobs(store: store, queue: queue, logger: TestServices.logger), queue)
        }
    }

    @Test("Submit writes the row, then queues it; the same job again is one row and one queue entry")
    func submitIsIdempotent() async throws {
        try await Self.withJobs { jobs, queue in
            let job = NewJob(sourceKey: "sources/a.mp4")
            guard case .created(let record) = try await jobs.submit(job) else { Issue.record("not created"); return }
            #expect(record.status == .pending)
            guard case .created = try await jobs.submit(job) else { Issue.record("the retried submit was refused"); return }
            #expect(try await queue.stats().ready == 1)
            #expect(try await jobs.store.listJobs().count == 1)
        }
    }

    @Test("Over the monthly limit nothing is written and nothing queued")
    func quota() async throws {
        try await Self.withJobs { jobs, queue in
            _ = try await jobs.submit(NewJob(owner: "anna", sourceKey: "sources/1.mp4"), monthlyLimit: 1)
            let refused = try await jobs.submit(NewJob(owner: "anna", sourceKey: "sources/2.mp4"), monthlyLimit: 1)
            #expect(refused == .quotaExceeded(used: 1, limit: 1))
            #expect(try await queue.stats().ready == 1)
        }
    }

    @Test("A queue that is away does not lose the job: the row stands and the reconciler queues it")
    func queueAway() async throws {
        try await Self.withJobs { jobs, queue in
            await queue.setReachable(false)
            let job = NewJob(sourceKey: "sources/a.mp4")
            guard case .created = try await jobs.submit(job) else { Issue.record("not accepted"); return }
            await queue.setReachable(true)
            #expect(try await queue.contains([job.id]) == [false])
            try await Task.sleep(for: .milliseconds(150))
            let report = try #require(try await jobs.reconcile(quiet: .milliseconds(100)))
            #expect(report.restoredPending == 1)
            #expect(try await queue.contains([job.id]) == [true])
        }
    }

    @Test("A backlog larger than one batch is reconciled whole: every job missing from the queue is put back in one pass")
    func backlogBeyondOneBatch() async throws {
        try await Self.withJobs { jobs, queue in
            await queue.setReachable(false)
            var ids: [UUID] = []
            for i in 0..<25 {
                let job = NewJob(sourceKey: "sources/backlog-\(i).mp4")
                _ = try await jobs.submit(job)
                ids.append(job.id)
            }
            await queue.setReachable(true)
            try await Task.sleep(for: .milliseconds(150))
            let report = try #require(try await jobs.reconcile(quiet: .milliseconds(100), batch: 10))
            #expect(report.restoredPending == 25)
            #expect(try await queue.contains(ids) == Array(repeating: true, count: 25))
        }
    }

    @Test("Cancel takes a waiting job off the queue; retry queues a failed one again, off the dead-letter list")
    func cancelAndRetry() async throws {
        try await Self.withJobs { jobs, queue in
            let waiting = NewJob(sourceKey: "sources/w.mp4")
            _ = try await jobs.submit(waiting)
            #expect(try await jobs.cancel(waiting.id) == .cancelled(from: .pending))
            #expect(try await queue.contains([waiting.id]) == [false])
            #expect(try await jobs.cancel(waiting.id) == .alreadyFinished(.cancelled))

            // A job that fails for good is dead-lettered, then an operator retries it.
            let doomed = NewJob(sourceKey: "sources/d.mp4", maxAttempts: 1)
            _ = try await jobs.submit(doomed)
            let consumer = queue.consumer(named: "c")
            // The cancelled job's entry comes first, as Redis's would: its claim finds it cancelled and acknowledges it.
            let stale = try #require(try await consumer.next(block: .seconds(1)))
            #expect(stale.jobID == waiting.id)
            #expect(await jobs.claim(stale, worker: "w", lease: .seconds(30), logger: TestServices.logger) == nil)
            let delivery = try #require(try await consumer.next(block: .seconds(1)))
            let (lease, _) = try #require(await jobs.claim(delivery, worker: "w", lease: .seconds(30), logger: TestServices.logger))
            let failure = JobFailure(code: "io_error", message: "disk full", retryable: true)
            #expect(
                await jobs.recordOutcome(.failed(failure, retryDelay: .zero), lease: lease, delivery: delivery, logger: TestServices.logger)
                    == .failed)
            #expect(try await queue.stats().deadLettered == 1)
            #expect(try await queue.contains([doomed.id]) == [false])
            guard case .requeued = try await jobs.retry(doomed.id, attempts: 2) else { Issue.record("not requeued"); return }
            #expect(try await queue.stats().deadLettered == 0)
            #expect(try await queue.contains([doomed.id]) == [true])
        }
    }

    @Test("Recorded outcomes: a success is acknowledged, a retryable failure waits its delay, a cancelled job's success is refused")
    func outcomes() async throws {
        try await Self.withJobs { jobs, queue in
            let logger = TestServices.logger
            let a = NewJob(sourceKey: "sources/a.mp4"), b = NewJob(sourceKey: "sources/b.mp4"), c = NewJob(sourceKey: "sources/c.mp4")
            for job in [a, b, c] { _ = try await jobs.submit(job) }
            let consumer = queue.consumer(named: "c")
            var held: [UUID: (JobLease, Delivery)] = [:]
            for _ in 0..<3 {
                let delivery = try #require(try await consumer.next(block: .seconds(1)))
                let (lease, _) = try #require(await jobs.claim(delivery, worker: "w", lease: .seconds(30), logger: logger))
                held[delivery.jobID] = (lease, delivery)
            }
            let result = JobResult(resultKey: "results/x.mp4", resultSize: 10)
            let (leaseA, deliveryA) = try #require(held[a.id])
            #expect(await jobs.recordOutcome(.succeeded(result), lease: leaseA, delivery: deliveryA, logger: logger) == .completed)
            #expect(try await jobs.store.job(a.id)?.status == .completed)

            let (leaseB, deliveryB) = try #require(held[b.id])
            let flaky = JobFailure(code: "storage_error", message: "timed out", retryable: true)
            #expect(
                await jobs.recordOutcome(.failed(flaky, retryDelay: .seconds(60)), lease: leaseB, delivery: deliveryB, logger: logger)
                    == .retrying)
            #expect(try await jobs.store.job(b.id)?.status == .pending)

            let (leaseC, deliveryC) = try #require(held[c.id])
            _ = try await jobs.cancel(c.id)
            #expect(await jobs.recordOutcome(.succeeded(result), lease: leaseC, delivery: deliveryC, logger: logger) == .cancelled)
            #expect(try await jobs.store.job(c.id)?.status == .cancelled)

            let stats = try await queue.stats()
            #expect(stats.inFlight == 0 && stats.delayed == 1 && stats.ready == 0)
        }
    }

    @Test("Paused, workers take nothing new; resumed, they work the queue off")
    func pauseAndResume() async throws {
        try await Self.withJobs { jobs, queue in
            try await jobs.pause()
            let ids = (0..<3).map { _ in UUID() }
            for id in ids { _ = try await jobs.submit(NewJob(id: id, sourceKey: "sources/\(id).mp4")) }
            let worker = QueueWorker(
                configuration: WorkerConfiguration(
                    name: "w", concurrency: 2, pollBlock: .milliseconds(100),
                    pausedCheck: .milliseconds(50)),
                jobs: jobs, handler: QuickHandler(), logger: TestServices.logger)
            let task = Task { await worker.run() }
            defer { task.cancel() }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await queue.stats().ready == 3, "nothing taken while paused")
            try await jobs.resume()
            #expect(
                try await TestServices.eventually(timeout: .seconds(10)) {
                    var done = 0
                    for id in ids where try await jobs.store.job(id)?.status == .completed { done += 1 }
                    return done == ids.count
                })
        }
    }
}

/// Completes at once.
struct QuickHandler: JobHandler {
    func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        JobResult(resultKey: "results/\(job.id.uuidString.lowercased()).mp4", resultSize: 1)
    }
}
