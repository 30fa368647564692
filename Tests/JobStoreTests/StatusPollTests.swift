import Foundation
import MomentsModel
import NIOPosix
import PostgresNIO
import ServiceTestSupport
import Synchronization
import Testing

@testable import JobStore

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The status poll's read: token and job in one statement, polls batched (real PostgreSQL)", .quiet)
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
                made.append(
                    try await store.create(
                        NewJob(
                            owner: (index.isMultiple(of: 2) ? annaDevice : benDevice).owner,
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
            .found(
                JobStatusRow(
                    id: poll.job, status: .pending, progress: 0, message: poll.tokenSHA256, createdAt: Date(timeIntervalSince1970: 0),
                    completedAt: nil, originalFilename: nil, sourceDuration: nil, segmentsSelected: nil, hasPoster: false))
        }
    }

    /// `StatusPolls.Answer` over `answer(_:)`, each batch in a task of its own.
    var answerer: StatusPolls.Answer {
        { polls, done in
            Task {
                do throws(JobStoreError) {
                    done(.success(try await self.answer(polls)))
                } catch {
                    done(.failure(error))
                }
            }
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

extension StatusPollTests {
    @Test("A lane's connection that the server ends (a restart, pg_terminate_backend) is opened again for the next polls")
    func laneReconnects() async throws {
        try await TestServices.withDatabase { store, url in
            let connection = StatusPollConnection(
                configuration: try DatabaseConfiguration(url: url),
                eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: TestServices.logger)
            defer { connection.close() }
            let polls = StatusPolls(concurrency: 1, answer: connection.read)
            #expect(try await polls.poll(job: UUID(), tokenSHA256: Self.stranger) == .unknownToken)
            let ended = try await store.client.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%unnest%'
                """, logger: TestServices.logger
            ).collect().count
            #expect(ended == 1, "the lane's connection was found and ended")
            // At most the poll that meets the ended connection fails; then the lane connects again.
            let answered = try await TestServices.eventually(timeout: .seconds(5)) {
                (try? await polls.poll(job: UUID(), tokenSHA256: Self.stranger)) == .unknownToken
            }
            #expect(answered)
            #expect(polls.statements <= 4)
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
        let polls = StatusPolls(concurrency: 1, answer: gate.answerer)
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
        let polls = StatusPolls(concurrency: 1, answer: gate.answerer)
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
        #expect(
            try await next
                == .found(
                    JobStatusRow(
                        id: job, status: .pending, progress: 0, message: "t", createdAt: Date(timeIntervalSince1970: 0),
                        completedAt: nil, originalFilename: nil, sourceDuration: nil, segmentsSelected: nil, hasPoster: false)))
        #expect(polls.waitingCount == 0)
    }

    @Test("A lane's connection to a server that never answers fails its polls once its timeout passes, and tries again for the next")
    func laneTimeout() async throws {
        // A socket that listens and never accepts: the connection is made, the startup gets no answer.
        let (listener, port) = try Loopback.listen()
        defer { close(listener) }
        let configuration = DatabaseConfiguration(
            host: "127.0.0.1", port: port, username: "moments",
            password: nil, database: "moments", tls: .disable)
        let connection = StatusPollConnection(
            configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(),
            logger: TestServices.logger, timeout: .milliseconds(300))
        defer { connection.close() }
        let polls = StatusPolls(concurrency: 1, answer: connection.read)
        for _ in 0..<2 {
            // Timed where the answer is given (on the lane's event loop), not where a test task
            // resumes: the suite's other tests keep the task pool busy.
            let started = ContinuousClock.now
            let answered = Mutex<(Duration, JobStoreError?)?>(nil)
            polls.poll(job: UUID(), tokenSHA256: "t") { result in
                let error: JobStoreError? = if case .failure(let error) = result { error } else { nil }
                answered.withLock { $0 = (ContinuousClock.now - started, error) }
            }
            _ = try await TestServices.eventually(timeout: .seconds(60)) { answered.withLock { $0 != nil } }
            let (elapsed, error) = try #require(answered.withLock { $0 }, "the poll was answered")
            #expect(error?.code == .unavailable && error?.message.contains("in time") == true, "\(String(describing: error))")
            #expect(
                elapsed >= .milliseconds(300) && elapsed < .seconds(10),
                "failed when the timeout passed (without it, the wait has no end): \(elapsed)")
        }
        #expect(polls.statements == 2)
    }
}
