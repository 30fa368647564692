import Foundation
@testable import JobStore
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Synchronization
import Testing

@Suite("The status poll's read: token and job in one statement, polls batched (real PostgreSQL)")
struct StatusPollTests {
    static let anna = String(repeating: "a", count: 64), ben = String(repeating: "b", count: 64)
    static let stranger = String(repeating: "c", count: 64)

    @Test("Own job found; another's, a missing one and the anonymous one not; an unknown or revoked token refused at once; never staler than the row")
    func answers() async throws {
        try await TestServices.withDatabase { store, _ in
            let annaDevice = try await store.registerDevice(tokenSHA256: Self.anna, name: "anna")
            let benDevice = try await store.registerDevice(tokenSHA256: Self.ben, name: "ben")
            let annas = try await store.create(NewJob(owner: annaDevice.owner, originalFilename: "beach \"day\".mov", sourceKey: "sources/a.mov"))
            let bens = try await store.create(NewJob(owner: benDevice.owner, sourceKey: "sources/b.mov"))
            let nobodys = try await store.create(NewJob(sourceKey: "sources/n.mov"))

            #expect(try await store.pollStatus(job: annas.id, tokenSHA256: Self.anna) == .found(JobStatusRow(annas)))
            #expect(try await store.pollStatus(job: bens.id, tokenSHA256: Self.anna) == .notFound, "another device's job is not found")
            #expect(try await store.pollStatus(job: nobodys.id, tokenSHA256: Self.anna) == .notFound, "nor is an anonymous one")
            #expect(try await store.pollStatus(job: UUID(), tokenSHA256: Self.anna) == .notFound)
            #expect(try await store.pollStatus(job: annas.id, tokenSHA256: Self.stranger) == .unknownToken)
            #expect(try await store.pollStatus(job: UUID(), tokenSHA256: Self.stranger) == .unknownToken, "401 before 404")
            #expect(try await store.pollStatus(job: nobodys.id, tokenSHA256: nil) == .found(JobStatusRow(nobodys)))
            #expect(try await store.pollStatus(job: annas.id, tokenSHA256: nil) == .notFound, "without a token only ownerless jobs")

            // The row as it is now: a worker's progress shows in the next poll.
            guard case .claimed(let lease, _) = try await store.claim(annas.id, worker: "w1", lease: .seconds(60)) else {
                Issue.record("the job is claimed"); return
            }
            _ = try await store.progress(lease, percent: 42, stage: "analysing", message: "Finding the best moments")
            guard case .found(let row) = try await store.pollStatus(job: annas.id, tokenSHA256: Self.anna) else {
                Issue.record("anna's job is found"); return
            }
            #expect(row.status == .processing && row.progress == 42 && row.message == "Finding the best moments")

            // Revoked: the very next poll is refused (nothing is cached).
            try await store.client.query("UPDATE devices SET revoked_at = now() WHERE id = \(annaDevice.id)", logger: TestServices.logger)
            #expect(try await store.pollStatus(job: annas.id, tokenSHA256: Self.anna) == .unknownToken)
            #expect(try await store.pollStatus(job: bens.id, tokenSHA256: Self.ben) == .found(JobStatusRow(bens)), "ben's token still works")
        }
    }

    @Test("Hundreds of polls at once, of every kind, each get their own answer; they share statements")
    func concurrentPolls() async throws {
        try await TestServices.withDatabase { store, _ in
            let annaDevice = try await store.registerDevice(tokenSHA256: Self.anna, name: "anna")
            let benDevice = try await store.registerDevice(tokenSHA256: Self.ben, name: "ben")
            var made: [JobRecord] = []
            for index in 0..<20 {
                made.append(try await store.create(NewJob(owner: (index.isMultiple(of: 2) ? annaDevice : benDevice).owner,
                                                          originalFilename: "clip \(index).mov", sourceKey: "sources/\(index).mov")))
            }
            let jobs = made
            // Poll i: job i % 20 with anna's, ben's or an unknown token; the answer follows from who owns it.
            let tokens = [Self.anna, Self.ben, Self.stranger]
            func expected(_ poll: Int) -> PolledJob {
                let job = jobs[poll % jobs.count], token = tokens[poll % tokens.count]
                if token == Self.stranger { return .unknownToken }
                return (job.owner == annaDevice.owner) == (token == Self.anna) ? .found(JobStatusRow(job)) : .notFound
            }
            let before = store.polls.statements
            let answers = try await withThrowingTaskGroup(of: (Int, PolledJob).self) { group in
                for poll in 0..<600 {
                    group.addTask { (poll, try await store.pollStatus(job: jobs[poll % jobs.count].id, tokenSHA256: tokens[poll % tokens.count])) }
                }
                var answers: [Int: PolledJob] = [:]
                for try await (poll, answer) in group { answers[poll] = answer }
                return answers
            }
            #expect(answers.count == 600)
            let wrong = (0..<600).filter { answers[$0] != expected($0) }
            #expect(wrong.isEmpty, "polls answered wrongly: \(wrong.prefix(10))")
            let statements = store.polls.statements - before
            #expect(statements >= 1 && statements < 600, "\(statements) statements for 600 polls")
        }
    }
}

/// An answerer that holds each batch until the test lets it go, and records the batches.
final class BatchGate: Sendable {
    let batches = Mutex<[[UUID]]>([])
    let releases = Mutex<[CheckedContinuation<Void, Never>]>([])
    let failing = Mutex(false)

    func answer(_ polls: [(job: UUID, tokenSHA256: String)]) async throws(JobStoreError) -> [PolledJob] {
        batches.withLock { $0.append(polls.map(\.job)) }
        await withCheckedContinuation { continuation in releases.withLock { $0.append(continuation) } }
        if failing.withLock({ $0 }) { throw JobStoreError(.unavailable, "The job database could not read the jobs.") }
        // Each poll's answer names its own job, so a mix-up shows.
        return polls.map { poll in
            .found(JobStatusRow(id: poll.job, status: .pending, progress: 0, message: poll.tokenSHA256, createdAt: Date(timeIntervalSince1970: 0),
                                completedAt: nil, originalFilename: nil, sourceDuration: nil, segmentsSelected: nil, hasPoster: false))
        }
    }

    /// Lets the oldest held batch go once it is held.
    func releaseNext() async {
        while true {
            let next: CheckedContinuation<Void, Never>? = releases.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next { return next.resume() }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

@Suite("Status polls batching (no database)")
struct StatusPollBatchingTests {
    /// A poll of a new job in a task of its own: the error it ended with, nil when it was answered.
    static func failure(of polls: StatusPolls, token: String) -> Task<JobStoreError?, Never> {
        Task {
            do throws(JobStoreError) {
                _ = try await polls.poll(job: UUID(), tokenSHA256: token)
                return nil
            } catch {
                return error
            }
        }
    }

    @Test("One statement at a time: polls that arrive meanwhile go together in the next, each answered with its own row")
    func batches() async throws {
        let gate = BatchGate()
        let polls = StatusPolls(concurrency: 1) { polls, _ async throws(JobStoreError) in try await gate.answer(polls) }
        let first = UUID()
        async let firstAnswer = polls.poll(job: first, tokenSHA256: "t0")
        while gate.batches.withLock({ $0.count }) < 1 { try await Task.sleep(for: .milliseconds(5)) }
        // While the first statement is held, 50 more polls arrive.
        let later = (1...50).map { _ in UUID() }
        let answers = Task {
            try await withThrowingTaskGroup(of: (UUID, PolledJob).self) { group in
                for (index, job) in later.enumerated() { group.addTask { (job, try await polls.poll(job: job, tokenSHA256: "t\(index + 1)")) } }
                var answers: [UUID: PolledJob] = [:]
                for try await (job, answer) in group { answers[job] = answer }
                return answers
            }
        }
        while polls.waitingCount < 50 { try await Task.sleep(for: .milliseconds(5)) }
        await gate.releaseNext()
        guard case .found(let row) = try await firstAnswer else { Issue.record("the first poll is answered"); return }
        #expect(row.id == first && row.message == "t0")
        await gate.releaseNext()
        let answered = try await answers.value
        let batches = gate.batches.withLock { $0 }
        #expect(batches.count == 2 && batches[1].count == 50 && Set(batches[1]) == Set(later), "the 50 went together: \(batches.map(\.count))")
        for (index, job) in later.enumerated() {
            guard case .found(let row) = answered[job] else { Issue.record("poll \(index) is answered"); continue }
            #expect(row.id == job && row.message == "t\(index + 1)")
        }
    }

    @Test("A failed statement fails its polls and those waiting for it with the database's error; the next poll gets a statement")
    func failures() async throws {
        let gate = BatchGate()
        let polls = StatusPolls(concurrency: 1) { polls, _ async throws(JobStoreError) in try await gate.answer(polls) }
        gate.failing.withLock { $0 = true }
        let failed = Self.failure(of: polls, token: "t")
        while gate.batches.withLock({ $0.count }) < 1 { try await Task.sleep(for: .milliseconds(5)) }
        // Two more arrive while the failing statement runs: they fail with it, without a statement of their own.
        let waiting = (0..<2).map { _ in Self.failure(of: polls, token: "w") }
        while polls.waitingCount < 2 { try await Task.sleep(for: .milliseconds(5)) }
        await gate.releaseNext()
        #expect(await failed.value?.code == .unavailable, "the poll fails with the database's error")
        for task in waiting { #expect(await task.value?.code == .unavailable, "so do the polls that waited for it") }
        #expect(gate.batches.withLock { $0.count } == 1)
        gate.failing.withLock { $0 = false }
        let job = UUID()
        async let next = polls.poll(job: job, tokenSHA256: "t")
        await gate.releaseNext()
        #expect(try await next == .found(JobStatusRow(id: job, status: .pending, progress: 0, message: "t", createdAt: Date(timeIntervalSince1970: 0),
                                                     completedAt: nil, originalFilename: nil, sourceDuration: nil, segmentsSelected: nil, hasPoster: false)))
        #expect(polls.waitingCount == 0)
    }

    @Test("A statement's timer cancels the runner's task; its polls fail, and the next poll gets a new runner")
    func cancelledRunner() async throws {
        let calls = Atomic(0)
        let polls = StatusPolls(concurrency: 1) { batch, cancel async throws(JobStoreError) in
            if calls.add(1, ordering: .relaxed).newValue == 1 {
                // What the timer does when the database does not answer: the wait below ends at once.
                cancel()
                do { try await Task.sleep(for: .seconds(60)) } catch {
                    throw JobStoreError(.unavailable, "The job database did not answer in time to read the jobs.")
                }
                Issue.record("the runner's task was not cancelled")
            }
            return batch.map { _ in .notFound }
        }
        let started = ContinuousClock.now
        let failed = Self.failure(of: polls, token: "t")
        #expect(await failed.value?.code == .unavailable)
        #expect(ContinuousClock.now - started < .seconds(30), "the cancelled wait ended at once")
        #expect(try await polls.poll(job: UUID(), tokenSHA256: "t") == .notFound, "a new runner answers the next poll")
    }
}
