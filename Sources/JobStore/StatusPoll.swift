import Foundation
import Logging
import MomentsContract
import MomentsModel
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The status poll's read: the device behind a token and its job, in one prepared statement.
///
/// Apps poll `GET /api/v1/jobs/{id}/status` every two seconds while a highlight is made, so this is
/// most of the API's traffic. One round trip checks the token (known, not revoked) and reads the
/// job only if that device owns it; nothing is cached, so a revoked token is refused by the next
/// poll and the answer is the row as it is now.
public enum PolledJob: Sendable, Equatable {
    /// The token is not known, or was revoked.
    case unknownToken
    /// No such job, or another owner's: the two are answered alike.
    case notFound
    case found(JobStatusRow)
}

/// The columns `/status` shows.
public struct JobStatusRow: Sendable, Equatable {
    public var id: UUID
    public var status: JobStatus
    public var progress: Int
    public var message: String?
    public var createdAt: Date
    public var completedAt: Date?
    public var originalFilename: String?
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var hasPoster: Bool

    public init(id: UUID, status: JobStatus, progress: Int, message: String?, createdAt: Date, completedAt: Date?,
                originalFilename: String?, sourceDuration: Double?, segmentsSelected: Int?, hasPoster: Bool) {
        self.id = id
        self.status = status
        self.progress = progress
        self.message = message
        self.createdAt = createdAt
        self.completedAt = completedAt
        self.originalFilename = originalFilename
        self.sourceDuration = sourceDuration
        self.segmentsSelected = segmentsSelected
        self.hasPoster = hasPoster
    }

    /// The same columns of a whole job row.
    public init(_ job: JobRecord) {
        self.init(id: job.id, status: job.status, progress: job.progress, message: job.message, createdAt: job.createdAt,
                  completedAt: job.completedAt, originalFilename: job.originalFilename, sourceDuration: job.sourceDuration,
                  segmentsSelected: job.segmentsSelected, hasPoster: job.posterKey != nil)
    }
}

extension JobStore {
    /// Job `id` as a status poll with the token whose SHA-256 (hex) is `tokenSHA256` sees it; with no
    /// token (anonymous, when the API allows it), only a job without an owner is found.
    ///
    /// Polls that arrive while others are at the database wait for them and then go together, as
    /// one statement (`StatusPolls`): each is answered by a read that began after it arrived.
    public func pollStatus(job id: UUID, tokenSHA256: String?) async throws(JobStoreError) -> PolledJob {
        guard let tokenSHA256 else {
            return try await database("read the job") { client, logger in
                for try await row in try await client.execute(AnonymousPoll(job: id), logger: logger) {
                    return row.map(PolledJob.found) ?? .notFound
                }
                return .notFound
            }
        }
        return try await polls.poll(job: id, tokenSHA256: tokenSHA256)
    }

    /// The same read for a token, answered through `answer` instead of a suspended task: for the
    /// API's status poll served on its event loop (`StatusPollHandler`), with no task of its own.
    /// Called on an event loop, the poll goes in that loop's lane and `answer` runs on that loop.
    public func pollStatus(job id: UUID, tokenSHA256: String, answer: @escaping StatusPollAnswer) {
        polls.poll(job: id, tokenSHA256: tokenSHA256, answer: answer)
    }

    /// Answers polls, in the order given, with one statement.
    /// Runs in the polls' runner task, which `cancel` cancels when the database does not answer in time.
    static func pollStatuses(_ polls: [(job: UUID, tokenSHA256: String)], client: PostgresClient, logger: Logger,
                             cancel: @escaping @Sendable () -> Void) async throws(JobStoreError) -> [PolledJob] {
        try await inCurrentTask("read the jobs", logger: logger, cancel: cancel) {
            var answers = [PolledJob](repeating: .unknownToken, count: polls.count)
            let statement = DevicePolls(jobs: polls.map(\.job), tokens: polls.map(\.tokenSHA256))
            for try await (index, answer) in try await client.execute(statement, logger: logger) where answers.indices.contains(index) {
                answers[index] = answer
            }
            return answers
        }
    }
}

/// Takes a status poll's answer, on the runner's thread (in a lane: the poll's event loop).
public typealias StatusPollAnswer = @Sendable (Result<PolledJob, JobStoreError>) -> Void

/// The status polls' lanes: one per event loop of SwiftNIO's shared group, each with a connection
/// of its own on that loop, and one over the store's pool for polls from anywhere else. A poll
/// from an event loop (every request to `moments api`) is read, answered and written on its own
/// loop, with no hop to another thread; with one lane for every poll, the loop that held the
/// database connection did all the database work and was the node's bottleneck while the other
/// loop idled (scripts/bench-api, BENCH_PROFILE=1).
final class StatusPollLanes: Sendable {
    private let lanes: [ObjectIdentifier: StatusPolls]
    private let elsewhere: StatusPolls
    /// The lanes' connections (`JobStore.run()` runs them); each opens its connection on first use.
    let clients: [PostgresClient]

    init(configuration: DatabaseConfiguration, client: PostgresClient, backgroundLogger: Logger, logger: Logger) {
        var lanes: [ObjectIdentifier: StatusPolls] = [:]
        var clients: [PostgresClient] = []
        var laneConfiguration = configuration.clientConfiguration
        laneConfiguration.options.maximumConnections = configuration.pollConcurrency
        for eventLoop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            let laneClient = PostgresClient(configuration: laneConfiguration, eventLoopGroup: eventLoop, backgroundLogger: backgroundLogger)
            clients.append(laneClient)
            lanes[ObjectIdentifier(eventLoop)] = StatusPolls(concurrency: configuration.pollConcurrency) { polls, cancel async throws(JobStoreError) in
                try await JobStore.pollStatuses(polls, client: laneClient, logger: logger, cancel: cancel)
            }
        }
        self.lanes = lanes
        self.clients = clients
        elsewhere = StatusPolls(concurrency: configuration.pollConcurrency) { polls, cancel async throws(JobStoreError) in
            try await JobStore.pollStatuses(polls, client: client, logger: logger, cancel: cancel)
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
    /// Answers a batch in the calling task; the second argument cancels that task (a statement that
    /// does not answer in time).
    typealias Answer = @Sendable ([(job: UUID, tokenSHA256: String)], _ cancel: @escaping @Sendable () -> Void) async throws(JobStoreError)
        -> [PolledJob]
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
        if let batch { Runner.start { runner in await self.run(batch, runner) } }
    }

    /// Answers `batch`, then whatever waited meanwhile, until nothing waits.
    private func run(_ first: [Waiting], _ runner: Runner) async {
        var batch = first
        while true {
            let result: Result<[PolledJob], JobStoreError>
            statementCount.add(1, ordering: .relaxed)
            do throws(JobStoreError) {
                result = .success(try await answer(batch.map { (job: $0.job, tokenSHA256: $0.tokenSHA256) }, runner.cancel))
            } catch {
                result = .failure(error)
            }
            // A failed statement (the database is down or did not answer in time) fails the polls
            // that waited for it too, at once: waiting another whole timeout would only fail them later.
            let failed = if case .failure = result { true } else { false }
            let next: [Waiting]? = state.withLock { state in
                if failed {
                    batch += state.waiting
                    state.waiting.removeAll()
                }
                if state.waiting.isEmpty {
                    state.running -= 1
                    return nil
                }
                return Self.take(&state, limit: batchLimit)
            }
            Self.resume(batch, with: result)
            guard let next else { return }
            batch = next
        }
    }

    /// Gives each poll its answer. In a lane the runner, the connection and the polls share one
    /// event loop, so each answer is written on the loop that read its request.
    private static func resume(_ batch: [Waiting], with result: Result<[PolledJob], JobStoreError>) {
        for (index, waiting) in batch.enumerated() {
            waiting.answer(result.map { $0[index] })
        }
    }

    /// The task that runs statements, which a statement's timer may cancel. A cancelled runner
    /// fails what waits and ends; the next poll starts another.
    private final class Runner: Sendable {
        private let task = Mutex<Task<Void, Never>?>(nil)
        private let cancelled = Atomic(false)

        static func start(_ body: @escaping @Sendable (Runner) async -> Void) {
            let runner = Runner()
            let task = Task { await body(runner) }
            runner.task.withLock { $0 = task }
            if runner.cancelled.load(ordering: .acquiring) { task.cancel() }
        }

        @Sendable func cancel() {
            cancelled.store(true, ordering: .releasing)
            task.withLock { $0?.cancel() }
        }
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

/// The poll's columns, from `jobs j`.
private let statusColumns = """
    j.id, j.status, j.progress, j.message, j.created_at, j.completed_at, j.original_filename, j.source_duration,
    j.segments_selected, j.poster_key IS NOT NULL
    """

private typealias StatusColumns = (UUID?, String?, Int?, String?, Date?, Date?, String?, Double?, Int?, Bool?)

/// One row of `statusColumns`; nil when the outer join found no job.
private func statusRow(_ columns: StatusColumns) -> JobStatusRow? {
    let (id, status, progress, message, created, completed, filename, duration, segments, poster) = columns
    guard let id, let status, let progress, let created else { return nil }
    return JobStatusRow(id: id, status: JobStatus(rawValue: status) ?? .failed, progress: progress, message: message,
                        createdAt: created, completedAt: completed, originalFilename: filename, sourceDuration: duration,
                        segmentsSelected: segments, hasPoster: poster ?? false)
}

/// One row per poll, by its position (from 0): none of the job's columns for a token that is not
/// known or was revoked, the job's when the token's device owns it.
private struct DevicePolls: PostgresPreparedStatement {
    static let name = "moments_status_polls"
    static let sql = """
        SELECT p.n - 1, d.id IS NOT NULL, \(statusColumns)
        FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS p(job, token, n)
        LEFT JOIN devices d ON d.token_sha256 = p.token AND d.revoked_at IS NULL
        LEFT JOIN jobs j ON j.id = p.job AND j.owner = d.id::text
        """
    typealias Row = (Int, PolledJob)
    let jobs: [UUID]
    let tokens: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(jobs)
        bindings.append(tokens)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (index, known, id, status, progress, message, created, completed, filename, duration, segments, poster) = try row.decode(
            (Int, Bool, UUID?, String?, Int?, String?, Date?, Date?, String?, Double?, Int?, Bool?).self)
        guard known else { return (index, .unknownToken) }
        let job = statusRow((id, status, progress, message, created, completed, filename, duration, segments, poster))
        return (index, job.map(PolledJob.found) ?? .notFound)
    }
}

/// Job `$1` if it has no owner.
private struct AnonymousPoll: PostgresPreparedStatement {
    static let name = "moments_status_poll_anonymous"
    static let sql = "SELECT \(statusColumns) FROM jobs j WHERE j.id = $1 AND j.owner IS NULL"
    static var bindingDataTypes: [PostgresDataType] { [.uuid] }
    typealias Row = JobStatusRow?
    let job: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(job)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { statusRow(try row.decode(StatusColumns.self)) }
}
