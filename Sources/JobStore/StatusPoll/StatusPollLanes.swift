import Foundation
import Logging
import MomentsModel
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Takes a status poll's answer, on the thread that read it (in a lane: the poll's event loop).
public typealias StatusPollAnswer = @Sendable (Result<PolledJob, JobStoreError>) -> Void

/// The status polls' lanes: one per event loop of SwiftNIO's shared group, each with a database
/// connection of its own on that loop (`StatusPollConnection`), and one over the store's pool for
/// polls from anywhere else. A poll from an event loop (every request to `moments api`) is read,
/// answered and written on its own loop, with no hop to another thread and no Swift task; with one
/// lane for every poll, the loop that held the database connection did all the database work and
/// was the node's bottleneck while the other loop idled (scripts/bench-api, BENCH_PROFILE=1).
final class StatusPollLanes: Sendable {
    private let lanes: [ObjectIdentifier: StatusPolls]
    private let elsewhere: StatusPolls
    /// The lanes' connections (closed when `JobStore.run()` ends); each opens on first use.
    let connections: [StatusPollConnection]

    init(configuration: DatabaseConfiguration, client: PostgresClient, logger: Logger) {
        var lanes: [ObjectIdentifier: StatusPolls] = [:]
        var connections: [StatusPollConnection] = []
        for eventLoop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            let connection = StatusPollConnection(configuration: configuration, eventLoop: eventLoop, logger: logger)
            connections.append(connection)
            lanes[ObjectIdentifier(eventLoop)] = StatusPolls(concurrency: configuration.pollConcurrency, answer: connection.read)
        }
        self.lanes = lanes
        self.connections = connections
        elsewhere = StatusPolls(concurrency: configuration.pollConcurrency) { polls, done in
            Task {
                do throws(JobStoreError) {
                    done(.success(try await JobStore.pollStatuses(polls, client: client, logger: logger)))
                } catch {
                    done(.failure(error))
                }
            }
        }
    }

    /// The lane of the event loop this runs on, or the store's pool's.
    func poll(job: UUID, tokenSHA256: String) async throws(JobStoreError) -> PolledJob {
        try await lane.poll(job: job, tokenSHA256: tokenSHA256)
    }

    func poll(job: UUID, tokenSHA256: String, answer: @escaping StatusPollAnswer) {
        lane.poll(job: job, tokenSHA256: tokenSHA256, answer: answer)
    }

    private var lane: StatusPolls {
        MultiThreadedEventLoopGroup.currentEventLoop.flatMap { lanes[ObjectIdentifier($0)] } ?? elsewhere
    }

    /// Statements run so far, in every lane.
    var statements: Int { lanes.values.reduce(elsewhere.statements) { $0 + $1.statements } }
}

/// Status polls on their way to the database. A poll goes at once while fewer than `concurrency`
/// statements are running; otherwise it waits, and when a statement ends, everything that waited
/// (up to `batchLimit`) goes in the next. Under light load each poll is its own statement; under
/// heavy load a statement answers many, so the database and the API each do one round trip for
/// them. Nothing is cached: every answer comes from a statement that began after its poll arrived.
final class StatusPolls: Sendable {
    private struct Waiting: Sendable {
        let job: UUID
        let tokenSHA256: String
        let answer: StatusPollAnswer
    }

    private struct State {
        var waiting: [Waiting] = []
        var running = 0
    }

    private let state = Mutex(State())
    private let statementCount = Atomic(0)
    private let concurrency: Int
    private let batchLimit: Int
    /// Reads a batch, in order, and calls `done` once with the answers, or with why it could not
    /// (within the database timeout: a statement that hangs must fail, not keep its polls).
    typealias Answer =
        @Sendable (
            _ polls: [(job: UUID, tokenSHA256: String)],
            _ done: @escaping @Sendable (Result<[PolledJob], JobStoreError>) -> Void
        ) -> Void
    private let answer: Answer

    init(concurrency: Int, batchLimit: Int = 256, answer: @escaping Answer) {
        self.concurrency = max(1, concurrency)
        self.batchLimit = max(1, batchLimit)
        self.answer = answer
    }

    /// Statements run so far.
    var statements: Int { statementCount.load(ordering: .relaxed) }
    /// Polls waiting for a statement.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func poll(job: UUID, tokenSHA256: String) async throws(JobStoreError) -> PolledJob {
        let result = await withCheckedContinuation { continuation in
            poll(job: job, tokenSHA256: tokenSHA256) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Queues the poll; `answer` takes its answer once a statement has read it.
    func poll(job: UUID, tokenSHA256: String, answer: @escaping StatusPollAnswer) {
        let batch: [Waiting]? = state.withLock { state in
            state.waiting.append(Waiting(job: job, tokenSHA256: tokenSHA256, answer: answer))
            guard state.running < concurrency else { return nil }
            state.running += 1
            return Self.take(&state, limit: batchLimit)
        }
        if let batch { run(batch) }
    }

    private func run(_ batch: [Waiting]) {
        statementCount.add(1, ordering: .relaxed)
        answer(batch.map { (job: $0.job, tokenSHA256: $0.tokenSHA256) }) { result in self.finished(batch, result) }
    }

    /// Answers `batch`, then sends whatever waited meanwhile.
    private func finished(_ batch: [Waiting], _ result: Result<[PolledJob], JobStoreError>) {
        // A failed statement (the database is down or did not answer in time) fails the polls
        // that waited for it too, at once: waiting another whole timeout would only fail them later.
        let failed = if case .failure = result { true } else { false }
        var answered = batch
        let next: [Waiting]? = state.withLock { state in
            if failed {
                answered += state.waiting
                state.waiting.removeAll()
            }
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return Self.take(&state, limit: batchLimit)
        }
        for (index, waiting) in answered.enumerated() {
            waiting.answer(result.map { index < $0.count ? $0[index] : .unknownToken })
        }
        if let next { run(next) }
    }

    private static func take(_ state: inout State, limit: Int) -> [Waiting] {
        if state.waiting.count <= limit {
            defer { state.waiting.removeAll(keepingCapacity: true) }
            return state.waiting
        }
        defer { state.waiting.removeFirst(limit) }
        return Array(state.waiting.prefix(limit))
    }
}

/// A lane's database connection, on its event loop, used through SwiftNIO's futures: the
/// statement is prepared once per connection, and a batch is one Bind/Execute round trip whose
/// rows are decoded as they arrive, with no Swift task, pool or async sequence on the way (those
/// were a third of the API's CPU at half load). It connects on first use and again after any
/// failure or when the server closes it; a statement that has not answered within `timeout` fails
/// its batch and its connection is closed.
final class StatusPollConnection: @unchecked Sendable {
    // Everything below is touched on `eventLoop` only.
    private let eventLoop: any EventLoop
    private let configuration: DatabaseConfiguration
    private let logger: Logger
    private let timeout: TimeAmount
    private var ready: EventLoopFuture<(PostgresConnection, PreparedQuery)>?
    private var closed = false
    private static let ids = Atomic(0)
    /// What a lane's read does, in its errors and log lines (as `JobStore.database` names calls).
    private static let what = "read the jobs"

    init(configuration: DatabaseConfiguration, eventLoop: any EventLoop, logger: Logger, timeout: Duration? = nil) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.timeout = TimeAmount(timeout ?? configuration.callTimeout)
    }

    /// `StatusPolls.Answer`: reads `polls` and calls `done` on the event loop.
    @Sendable func read(
        _ polls: [(job: UUID, tokenSHA256: String)],
        done: @escaping @Sendable (Result<[PolledJob], JobStoreError>) -> Void
    ) {
        if eventLoop.inEventLoop {
            start(polls, done: done)
        } else {
            eventLoop.execute { self.start(polls, done: done) }
        }
    }

    /// Closes the connection; later reads fail.
    func close() {
        eventLoop.execute {
            self.closed = true
            self.ready?.whenSuccess { connection, _ in Self.close(connection) }
            self.ready = nil
        }
    }

    private final class Call: @unchecked Sendable {
        var over = false
        var answers: [PolledJob]
        init(count: Int) { answers = Array(repeating: .unknownToken, count: count) }
    }

    private func start(_ polls: [(job: UUID, tokenSHA256: String)], done: @escaping @Sendable (Result<[PolledJob], JobStoreError>) -> Void) {
        guard !closed else {
            done(.failure(JobStore.cancelled(Self.what)))
            return
        }
        let call = Call(count: polls.count)
        let connection = connected()
        let timer = eventLoop.scheduleTask(in: timeout) {
            guard !call.over else { return }
            call.over = true
            self.drop(connection)
            done(.failure(JobStore.timedOut(Self.what, logger: self.logger)))
        }
        let binds = [
            PostgresData(array: polls.map { PostgresData(uuid: $0.job) }, elementType: .uuid),
            PostgresData(array: polls.map { PostgresData(string: $0.tokenSHA256) }, elementType: .text),
        ]
        connection.flatMap { _, query in
            query.execute(binds) { row in
                let (index, answer) = try DevicePolls.decode(binaryRow: row)
                if call.answers.indices.contains(index) { call.answers[index] = answer }
            }
        }.whenComplete { result in
            guard !call.over else { return }
            call.over = true
            timer.cancel()
            switch result {
            case .success:
                done(.success(call.answers))
            case .failure(let error):
                self.drop(connection)
                done(.failure(JobStore.failed(Self.what, error, logger: self.logger)))
            }
        }
    }

    /// The open connection with the statement prepared, opened now if there is none.
    private func connected() -> EventLoopFuture<(PostgresConnection, PreparedQuery)> {
        if let ready { return ready }
        let future = makeConfiguration().flatMap { configuration in
            PostgresConnection.connect(
                on: self.eventLoop, configuration: configuration, id: Self.ids.add(1, ordering: .relaxed).newValue,
                logger: self.logger)
        }.flatMap { connection in
            connection.prepare(query: DevicePolls.sql).map { (connection, $0) }.flatMapErrorThrowing { error in
                Self.close(connection)
                throw error
            }
        }
        ready = future
        future.whenSuccess { connection, _ in
            // The server closed it (a restart, an idle timeout): the next read opens another.
            connection.closeFuture.whenComplete { _ in self.drop(future) }
        }
        return future
    }

    /// Forgets `connection` (if it is still the current one) and closes it.
    private func drop(_ connection: EventLoopFuture<(PostgresConnection, PreparedQuery)>) {
        if ready === connection { ready = nil }
        connection.whenSuccess { connection, _ in Self.close(connection) }
    }

    private static func close(_ connection: PostgresConnection) {
        let _: EventLoopFuture<Void> = connection.close()
    }

    private func makeConfiguration() -> EventLoopFuture<PostgresConnection.Configuration> {
        eventLoop.makeCompletedFuture { try configuration.connectionConfiguration() }
    }
}
