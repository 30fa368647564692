import Foundation
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

@Suite("Job transitions and their fences (real PostgreSQL)", .quiet)
struct TransitionTests {
    static let result = JobResult(resultKey: "results/x.mp4", resultSize: 1234, sourceDuration: 61.5, segmentsSelected: 7)

    func claim(_ store: JobStore, _ id: UUID, _ worker: String, lease: Duration = .seconds(60)) async throws -> JobLease {
        guard case .claimed(let lease, _) = try await store.claim(id, worker: worker, lease: lease) else {
            throw TestFailure("\(worker) could not claim \(id)")
        }
        return lease
    }

    @Test("Create is idempotent for the same job and refuses a different one with the same id")
    func idempotentCreate() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = NewJob(
                owner: "device-1", originalFilename: "IMG_0042.MOV", sourceKey: "sources/1.mov", sourceSize: 99,
                targetDuration: 45, quality: .medium)
            let first = try await store.create(job)
            let second = try await store.create(job)
            #expect(first == second)
            #expect(first.status == .pending && first.attempt == 0 && first.maxAttempts == 3 && first.quality == .medium)
            var other = job
            other.sourceKey = "sources/other.mov"
            await #expect(throws: JobStoreError.self) { try await store.create(other) }
            #expect(try await store.events(job.id).map(\.to) == [.pending])
        }
    }

    @Test("The happy path: claim, progress, heartbeat, complete — each recorded once")
    func happyPath() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/2.mp4"))
            let lease = try await claim(store, job.id, "w1")
            #expect(lease.attempt == 1)
            #expect(
                try await store.claim(job.id, worker: "w2", lease: .seconds(60))
                    == .heldByAnother(
                        worker: "w1", until: try #require(try await store.job(job.id)?.leaseExpiresAt)))
            #expect(try await store.progress(lease, percent: 40, stage: "analyzing", message: "Analyzing motion") == .held)
            #expect(try await store.progress(lease, percent: 30, stage: "analyzing", message: "Analyzing motion") == .held)
            #expect(try await store.job(job.id)?.progress == 40, "progress never goes backwards")
            #expect(try await store.heartbeat(lease, extendBy: .seconds(60)) == .held)
            #expect(try await store.complete(lease, result: Self.result))
            #expect(try await !store.complete(lease, result: Self.result), "a second completion is refused")
            #expect(try await store.leaseState(lease) == .completed, "a completion whose answer went missing is recognised as this attempt's")
            let done = try #require(try await store.job(job.id))
            #expect(done.status == .completed && done.progress == 100 && done.resultKey == "results/x.mp4")
            #expect(done.segmentsSelected == 7 && done.sourceDuration == 61.5 && done.leaseOwner == nil)
            #expect(done.completedAt != nil && done.startedAt != nil)
            let events = try await store.events(job.id)
            #expect(events.map(\.to) == [.pending, .processing, .completed])
            #expect(events.last?.worker == "w1" && events.last?.attempt == 1)
            #expect(try await store.claim(job.id, worker: "w2", lease: .seconds(60)) == .finished(.completed))
        }
    }

    @Test("A worker whose lease was taken over can no longer report progress, complete or fail")
    func staleWorkerIsFenced() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/3.mp4"))
            let stale = try await claim(store, job.id, "slow", lease: .milliseconds(200))
            try await Task.sleep(for: .milliseconds(300))
            let fresh = try await claim(store, job.id, "fast")
            #expect(fresh.attempt == 2)
            #expect(try await store.progress(stale, percent: 90, stage: "rendering", message: "Rendering") == .lost)
            #expect(try await store.heartbeat(stale, extendBy: .seconds(60)) == .lost)
            #expect(try await !store.complete(stale, result: Self.result))
            #expect(try await store.leaseState(stale) == .lost)
            #expect(try await store.fail(stale, code: "io_error", message: "disk", retryable: true, retryDelay: .zero) == .refused)
            #expect(try await store.complete(fresh, result: Self.result))
            let events = try await store.events(job.id)
            try #require(events.map(\.to) == [.pending, .processing, .processing, .completed], "\(events)")
            #expect(events[2].detail?.contains("lease of slow lapsed") == true)
            #expect(events.filter { $0.to == .completed }.map(\.worker) == ["fast"])
        }
    }

    @Test("A lease is never taken over before it lapses")
    func noEarlyTakeover() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/4.mp4"))
            let lease = try await claim(store, job.id, "w1", lease: .seconds(2))
            for _ in 0..<3 {
                guard case .heldByAnother = try await store.claim(job.id, worker: "w2", lease: .seconds(60)) else {
                    Issue.record("taken over before the lease lapsed")
                    return
                }
                #expect(try await store.heartbeat(lease, extendBy: .seconds(2)) == .held)
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    @Test("Cancel: a pending job never starts; a running one is told; a cancelled job cannot complete")
    func cancel() async throws {
        try await TestServices.withDatabase { store, _ in
            let waiting = try await store.create(NewJob(sourceKey: "sources/5.mp4"))
            #expect(try await store.cancel(waiting.id) == .cancelled(from: .pending))
            #expect(try await store.claim(waiting.id, worker: "w1", lease: .seconds(60)) == .finished(.cancelled))

            let running = try await store.create(NewJob(sourceKey: "sources/6.mp4"))
            let lease = try await claim(store, running.id, "w1")
            #expect(try await store.cancel(running.id, owner: "someone-else") == .notFound, "only the owner (when given) may cancel")
            #expect(try await store.cancel(running.id) == .cancelled(from: .processing))
            #expect(try await store.leaseState(lease) == .cancelled)
            #expect(try await store.progress(lease, percent: 50, stage: "x", message: "x") == .cancelled)
            #expect(try await !store.complete(lease, result: Self.result))
            #expect(try await store.cancel(running.id) == .alreadyFinished(.cancelled))
            #expect(try await store.cancel(UUID()) == .notFound)
            #expect(try await store.events(running.id).map(\.to) == [.pending, .processing, .cancelled])
        }
    }

    @Test("Retryable failures wait out their delay; permanent ones fail at once with their own code")
    func retryAndPermanent() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/7.mp4"))
            let first = try await claim(store, job.id, "w1")
            // A delay long enough that a loaded machine cannot pass it before the early claim below.
            guard
                case .willRetry = try await store.fail(
                    first, code: "storage_error", message: "R2 timed out", retryable: true,
                    retryDelay: .seconds(2))
            else {
                Issue.record("a retryable failure on attempt 1 of 3 must retry")
                return
            }
            let waiting = try #require(try await store.job(job.id))
            #expect(waiting.status == .pending && waiting.errorCode == "storage_error" && waiting.message == "Retrying after a temporary problem")
            guard case .notYet = try await store.claim(job.id, worker: "w2", lease: .seconds(60)) else {
                Issue.record("claimed before the retry delay passed")
                return
            }
            try await Task.sleep(for: .milliseconds(2100))
            let second = try await claim(store, job.id, "w2")
            #expect(second.attempt == 2)
            #expect(
                try await store.fail(
                    second, code: "corrupt_media", message: "This file is damaged.", retryable: false,
                    retryDelay: .seconds(1)) == .failed(code: "corrupt_media"))
            let failed = try #require(try await store.job(job.id))
            #expect(failed.status == .failed && failed.errorMessage == "This file is damaged." && failed.message == "This file is damaged.")
            #expect(try await store.events(job.id).map(\.to) == [.pending, .processing, .pending, .processing, .failed])
        }
    }

    @Test("After the last attempt a retryable failure becomes exhausted_retries and stays queryable")
    func exhaustedRetries() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/8.mp4", maxAttempts: 2))
            for attempt in 1...2 {
                let lease = try await claim(store, job.id, "w\(attempt)")
                let outcome = try await store.fail(lease, code: "io_error", message: "disk full", retryable: true, retryDelay: .zero)
                #expect(outcome == (attempt == 1 ? FailOutcome.willRetry(at: outcome.retryTime ?? .distantPast) : .failed(code: "exhausted_retries")))
            }
            let dead = try #require(try await store.job(job.id))
            #expect(dead.status == .failed && dead.errorCode == "exhausted_retries")
            #expect(dead.errorMessage == "Failed after 2 attempts. Last error: disk full")
            let failures = try await one(store, "SELECT error_code, jobs FROM admin_failures", as: (String, Int).self)
            #expect(failures.0 == "exhausted_retries" && failures.1 == 1)
        }
    }

    @Test("A lease that lapses on the last attempt dead-letters the job instead of starting another")
    func lapsedOnLastAttempt() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/9.mp4", maxAttempts: 1))
            _ = try await claim(store, job.id, "w1", lease: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await store.lapsedLeases().map(\.id) == [job.id])
            #expect(try await store.claim(job.id, worker: "w2", lease: .seconds(60)) == .exhausted)
            #expect(try await store.job(job.id)?.errorCode == "exhausted_retries")
            #expect(try await store.lapsedLeases().isEmpty)
        }
    }

    @Test("The reconciler fails a lapsed last attempt only after the takeover grace; a renewal within it keeps the job")
    func lapsedWithGrace() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/11.mp4", maxAttempts: 1))
            let lease = try await claim(store, job.id, "w1", lease: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await store.lapsedLeases().map(\.id) == [job.id])
            #expect(try await !store.exhaustLapsed(job.id, attempt: 1, grace: .seconds(5)), "lapsed 0.2 s ago: within the grace")
            #expect(try await store.heartbeat(lease, extendBy: .seconds(60)) == .held, "the late renewal still holds")
            #expect(try await store.job(job.id)?.status == .processing)
            #expect(try await store.heartbeat(lease, extendBy: .milliseconds(100)) == .held)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await store.exhaustLapsed(job.id, attempt: 1, grace: .milliseconds(100)), "lapsed past the grace")
            #expect(try await store.job(job.id)?.errorCode == "exhausted_retries")
        }
    }

    @Test("Giving a job back at shutdown does not use up an attempt")
    func release() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/10.mp4", maxAttempts: 1))
            let lease = try await claim(store, job.id, "w1")
            #expect(try await store.release(lease))
            let second = try await claim(store, job.id, "w2")
            #expect(second.attempt == 2)
            #expect(try await store.job(job.id)?.maxAttempts == 2)
        }
    }

    @Test("The admin views answer the questions of docs/data-plane.md")
    func adminViews() async throws {
        try await TestServices.withDatabase { store, _ in
            for index in 0..<3 {
                let job = try await store.create(NewJob(sourceKey: "sources/v\(index).mp4"))
                if index < 2 {
                    let lease = try await claim(store, job.id, "w\(index)")
                    if index == 0 { #expect(try await store.complete(lease, result: Self.result)) }
                }
            }
            let waiting = try await one(store, "SELECT waiting, oldest_wait IS NOT NULL FROM admin_waiting", as: (Int, Bool).self)
            #expect(waiting.0 == 1 && waiting.1)
            let worker = try await one(store, "SELECT worker, progress FROM admin_workers", as: (String, Int).self)
            #expect(worker.0 == "w1" && worker.1 == 0)
            let hourly = try await one(store, "SELECT completed, p50_seconds IS NOT NULL FROM admin_throughput_hourly", as: (Int, Bool).self)
            #expect(hourly.0 == 1 && hourly.1)
            #expect(try await one(store, "SELECT sum(completed)::int FROM admin_throughput_daily", as: Int.self) == 1)
            #expect(try await one(store, "SELECT count(*) FROM admin_job_history", as: Int.self) == 3 + 2 + 1)
        }
    }
}

/// The single row a query must return.
func one<each Column: PostgresDecodable>(
    _ store: JobStore, _ sql: String,
    as type: (repeat each Column).Type
) async throws -> (repeat each Column) {
    var rows: [(repeat each Column)] = []
    for try await row in try await store.client.query(.init(unsafeSQL: sql)).decode((repeat each Column).self) { rows.append(row) }
    guard rows.count == 1 else { throw TestFailure("\(sql) returned \(rows.count) rows, not 1") }
    return rows[0]
}

extension FailOutcome {
    var retryTime: Date? { if case .willRetry(let at) = self { at } else { nil } }
}
