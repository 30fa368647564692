import Foundation
import Logging
import MomentsModel
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The jobs table and its history, in PostgreSQL: the source of truth the Redis queue follows.
///
/// Every status change is one SQL statement that names the status it expects and, for a worker, the
/// attempt its claim started (the fencing token) and writes its `job_events` row in the same statement.
/// A worker whose lease was taken over, or whose job was cancelled, is refused.
public struct JobStore: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// What a call gets when it does not say (`DatabaseConfiguration.callTimeout`).
    let callTimeout: Duration
    /// Status polls on their way to the database (`pollStatus`), by event loop.
    let polls: StatusPollLanes

    /// Call `run()` in a long-lived task before using the store.
    public init(configuration: DatabaseConfiguration, logger: Logger) {
        // The pool's own chatter (warnings about leases requested before `run()` starts) is kept to errors;
        // failures of our queries are logged by `database(_:_:)`.
        var background = logger
        background.logLevel = .error
        let client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: background)
        self.client = client
        self.logger = logger
        callTimeout = configuration.callTimeout
        polls = StatusPollLanes(configuration: configuration, client: client, logger: logger)
    }

    /// Runs the connection pool until the surrounding task is cancelled; then the status polls'
    /// connections close too.
    public func run() async {
        await client.run()
        for connection in polls.connections { connection.close() }
    }

    // MARK: Creating and reading

    /// Inserts a `pending` job. Creating the same id again with the same source is a no-op that
    /// returns the existing row; with a different source it is a `conflict`.
    @discardableResult
    public func create(_ job: NewJob) async throws(JobStoreError) -> JobRecord {
        switch try await create(job, monthlyLimit: nil) {
        case .created(let record): return record
        case .quotaExceeded: throw JobStoreError(.unavailable, "The job could not be created.")  // no limit was given
        }
    }

    /// Inserts a `pending` job unless its owner has `monthlyLimit` highlights this calendar month
    /// (UTC) already. The count and the insert happen under a lock per owner, so concurrent uploads
    /// cannot both take the last one. Failed and cancelled jobs do not count, and neither does a job
    /// whose id exists already (the same submission again).
    public func create(_ job: NewJob, monthlyLimit: Int?) async throws(JobStoreError) -> CreateOutcome {
        let inserted = try await database("create the job") { connection, logger -> CreateOutcome? in
            try await connection.withTransaction(logger: logger) { connection in
                if let owner = job.owner, let limit = monthlyLimit {
                    let lock = Int64(bitPattern: Self.fnv1a("moments-quota:\(owner)"))
                    try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
                    // The same job submitted again (a retried request) spends nothing.
                    if try await connection.query("SELECT 1 FROM jobs WHERE id = \(job.id)", logger: logger).hasRows() { return nil }
                    let used = try await Self.monthlyUsage(owner: owner, on: connection, logger: logger).used
                    if used >= limit { return .quotaExceeded(used: used, limit: limit) }
                }
                let rows = try await connection.query(
                    """
                    WITH t AS (
                        INSERT INTO jobs (id, owner, original_filename, source_key, source_size, source_duration, target_duration, quality,
                                          codec, max_attempts, stage, message, callback_url, trace_context,
                                          min_segment, max_segment, max_segments, aspect, fps, music_id, music_key, music_filename, music_volume, keep_source_audio,
                                          metadata)
                        VALUES (\(job.id), \(job.owner), \(job.originalFilename), \(job.sourceKey), \(job.sourceSize),
                                \(job.sourceDuration.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }), \(job.targetDuration), \(job.quality.rawValue), \(job.codec.rawValue), \(job.maxAttempts), 'queued', 'Waiting for a worker',
                                \(job.callbackURL), \(Self.traceJSON(job.traceContext))::jsonb,
                                \(job.choices.minSegment), \(job.choices.maxSegment), \(job.choices.maxSegments), \(job.choices.aspect.rawValue),
                                \(job.choices.fps.rawValue), \(job.music?.trackID), \(job.music?.uploadedKey), \(job.music?.uploadedKey == nil ? nil : job.music?.filename), \(job.music?.volume),
                                \(job.music?.keepSourceAudio ?? true), \(job.metadata.map(JobMetadata.json))::jsonb)
                        ON CONFLICT (id) DO NOTHING
                        RETURNING \(unescaped: Self.columns)),
                    e AS (INSERT INTO job_events (job_id, to_status, attempt, detail) SELECT id, 'pending', 0, 'created' FROM t)
                    SELECT \(unescaped: Self.columns) FROM t
                    """, logger: logger)
                for try await row in rows { return .created(try Self.record(row)) }
                return nil
            }
        }
        if let inserted { return inserted }
        // The id exists already: the same job again is fine, a different one is a conflict.
        guard let existing = try await self.job(job.id) else {
            throw JobStoreError(.unavailable, "The job could not be created or found.")
        }
        if existing.sourceKey != job.sourceKey || existing.owner != job.owner {
            throw JobStoreError(.conflict, "A different job with id \(job.id) already exists.")
        }
        return .created(existing)
    }

    public func job(_ id: UUID) async throws(JobStoreError) -> JobRecord? {
        try await database("read the job") { connection, logger in
            let rows = try await connection.query("SELECT \(unescaped: Self.columns) FROM jobs WHERE id = \(id)", logger: logger)
            for try await row in rows { return try Self.record(row) }
            return nil
        }
    }

    /// The job's status changes, oldest first.
    public func events(_ id: UUID) async throws(JobStoreError) -> [JobEvent] {
        try await database("read the job's history") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT at, from_status, to_status, attempt, worker, detail, diagnostics FROM job_events WHERE job_id = \(id) ORDER BY id
                """, logger: logger)
            var events: [JobEvent] = []
            for try await (at, from, to, attempt, worker, detail, diagnostics)
                in rows.decode((Date, String?, String, Int, String?, String?, String?).self)
            {
                events.append(
                    JobEvent(
                        at: at, from: from.flatMap(JobStatus.init(rawValue:)), to: JobStatus(rawValue: to) ?? .failed,
                        attempt: attempt, worker: worker, detail: detail, diagnostics: diagnostics))
            }
            return events
        }
    }

    // MARK: Plumbing

    static let columns = """
        id, owner, status, progress, stage, message, error_code, error_message, original_filename, source_key, source_size,
        result_key, result_size, target_duration, quality, codec, source_duration, segments_selected, attempt, max_attempts,
        run_after, lease_owner, lease_expires_at, created_at, started_at, completed_at, updated_at, segments::text AS segments,
        callback_url, source_deleted_at, result_expired_at, trace_context::text AS trace_context,
        min_segment, max_segment, max_segments, aspect, poster_key, thumbnails_key, source_media::text AS source_media, fps,
        music_id, music_key, music_filename, music_volume, keep_source_audio, metadata::text AS metadata, erased_at
        """

    /// The same columns, qualified for statements that join `jobs j` with another relation.
    static let qualifiedColumns = columns.split(separator: ",").map { "j." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .joined(separator: ", ")

    /// `value` as JSON text for a jsonb column; nil for nil.
    static func json<T: Encodable>(_ value: T?) -> String? {
        guard let value, let data = try? JSONEncoder().encode(value) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// `traceContext` as a JSON object for `jobs.trace_context`; nil when there is none.
    static func traceJSON(_ traceContext: [String: String]?) -> String? {
        guard let traceContext, !traceContext.isEmpty,
            let data = try? JSONEncoder().encode(traceContext)
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func record(_ row: PostgresRow) throws -> JobRecord {
        let r = row.makeRandomAccess()
        return JobRecord(
            id: try r["id"].decode(UUID.self), owner: try r["owner"].decode(String?.self),
            status: JobStatus(rawValue: try r["status"].decode(String.self)) ?? .failed,
            progress: try r["progress"].decode(Int.self), stage: try r["stage"].decode(String?.self),
            message: try r["message"].decode(String?.self), errorCode: try r["error_code"].decode(String?.self),
            errorMessage: try r["error_message"].decode(String?.self),
            originalFilename: try r["original_filename"].decode(String?.self), sourceKey: try r["source_key"].decode(String.self),
            sourceSize: try r["source_size"].decode(Int64?.self), resultKey: try r["result_key"].decode(String?.self),
            resultSize: try r["result_size"].decode(Int64?.self), targetDuration: try r["target_duration"].decode(Double.self),
            quality: Quality(rawValue: try r["quality"].decode(String.self)) ?? .high,
            codec: VideoCodecChoice(rawValue: try r["codec"].decode(String.self)) ?? .auto,
            sourceDuration: try r["source_duration"].decode(Double?.self),
            segmentsSelected: try r["segments_selected"].decode(Int?.self), attempt: try r["attempt"].decode(Int.self),
            maxAttempts: try r["max_attempts"].decode(Int.self), runAfter: try r["run_after"].decode(Date.self),
            leaseOwner: try r["lease_owner"].decode(String?.self), leaseExpiresAt: try r["lease_expires_at"].decode(Date?.self),
            createdAt: try r["created_at"].decode(Date.self), startedAt: try r["started_at"].decode(Date?.self),
            completedAt: try r["completed_at"].decode(Date?.self), updatedAt: try r["updated_at"].decode(Date.self),
            segments: try r["segments"].decode(String?.self).flatMap { try? JSONDecoder().decode([ResultSegment].self, from: Data($0.utf8)) },
            callbackURL: try r["callback_url"].decode(String?.self),
            sourceDeletedAt: try r["source_deleted_at"].decode(Date?.self),
            resultExpiredAt: try r["result_expired_at"].decode(Date?.self),
            traceContext: try r["trace_context"].decode(String?.self)
                .flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) },
            choices: HighlightChoices(
                minSegment: try r["min_segment"].decode(Double?.self), maxSegment: try r["max_segment"].decode(Double?.self),
                maxSegments: try r["max_segments"].decode(Int?.self),
                aspect: AspectRatio(rawValue: try r["aspect"].decode(String.self)) ?? .source,
                fps: FrameRateChoice(rawValue: try r["fps"].decode(String.self)) ?? .upTo30),
            posterKey: try r["poster_key"].decode(String?.self), thumbnailsKey: try r["thumbnails_key"].decode(String?.self),
            sourceMedia: try r["source_media"].decode(String?.self).flatMap { try? JSONDecoder().decode(SourceMedia.self, from: Data($0.utf8)) },
            music: try Self.music(
                id: try r["music_id"].decode(UUID?.self), key: try r["music_key"].decode(String?.self),
                filename: try r["music_filename"].decode(String?.self),
                volume: try r["music_volume"].decode(Double?.self), keep: try r["keep_source_audio"].decode(Bool.self)),
            metadata: try r["metadata"].decode(String?.self).flatMap(Self.metadata), erasedAt: try r["erased_at"].decode(Date?.self))
    }

    /// `jobs.metadata` as PostgreSQL writes jsonb; nil when there is none.
    static func metadata(_ text: String) -> [String: String]? {
        try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))
    }

    /// A job's soundtrack from its columns: a library track, an uploaded one, or none.
    static func music(id: UUID?, key: String?, filename: String?, volume: Double?, keep: Bool) -> MusicChoice? {
        if let id { return MusicChoice(trackID: id, volume: volume ?? MusicChoice.defaultVolume, keepSourceAudio: keep) }
        guard let key else { return nil }
        return MusicChoice(
            uploaded: filename ?? String(key.split(separator: "/").last ?? "music"), at: key, volume: volume ?? MusicChoice.defaultVolume,
            keepSourceAudio: keep)
    }

    /// Runs database work on a connection of the pool, turning any failure into a `JobStoreError`
    /// whose message says what could not be done; the full error (SQL state, server message) goes
    /// to the log only.
    ///
    /// A call gets `timeout` (the configuration's `callTimeout`, 10 s) to finish, and then it ends: while PostgreSQL is down the pool
    /// keeps requests waiting for a connection, and when it goes silent (a frozen machine, a
    /// failover that black-holes the old primary) a statement already sent is never answered, and
    /// PostgresNIO does not give it up when its task is cancelled. So when the time is up the
    /// waiting task is cancelled and the connection the work holds is closed, which fails its
    /// statement at once and gives the pool room for a new connection; the caller gets
    /// `unavailable` (503 `service_unavailable` from the API). Two tasks and one timer per call.
    func database<T: Sendable>(
        _ what: String, timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(JobStoreError) -> T {
        try await Self.database(what, timeout: timeout ?? callTimeout, client: client, logger: logger, body)
    }

    static func database<T: Sendable>(
        _ what: String, timeout: Duration = .seconds(10), client: PostgresClient, logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(JobStoreError) -> T {
        let deadline = Deadline()
        let work = Task {
            try await client.withConnection { connection in
                try deadline.hold(connection)
                defer { deadline.release() }
                return try await body(connection, logger)
            }
        }
        // The caller hears at the deadline whatever the work does then: a statement queued on a
        // connection as it closes may never be failed by PostgresNIO, and its task never end.
        let outcome: Result<T, any Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = AnswerOnce(continuation)
                let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(timeout)) {
                    deadline.expire()
                    work.cancel()
                    answer.resume(.failure(CancellationError()))
                }
                Task {
                    let result = await work.result
                    timer.cancel()
                    answer.resume(result)
                }
            }
        } onCancel: {
            work.cancel()
        }
        do {
            return try outcome.get()
        } catch {
            if deadline.expired { throw timedOut(what, logger: logger) }
            if let error = error as? JobStoreError { throw error }
            if error is CancellationError { throw cancelled(what) }
            throw failed(what, error, logger: logger)
        }
    }

    /// A database call that ran out of time, logged.
    static func timedOut(_ what: String, logger: Logger) -> JobStoreError {
        logger.error("database call timed out", metadata: ["operation": "\(what)"])
        return JobStoreError(.unavailable, "The job database did not answer in time to \(what).")
    }

    /// A database call that failed with `error` (logged in full, not shown).
    static func failed(_ what: String, _ error: any Error, logger: Logger) -> JobStoreError {
        logger.error("database call failed", metadata: ["operation": "\(what)", "error": "\(String(reflecting: error))"])
        return JobStoreError(.unavailable, "The job database could not \(what).")
    }

    /// A database call given up because its task (or the store) ended.
    static func cancelled(_ what: String) -> JobStoreError {
        JobStoreError(.unavailable, "The job database call to \(what) was cancelled.")
    }

    static func fnv1a(_ string: String) -> UInt64 {
        string.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

/// Resumes a continuation with the first answer it is given; later ones are dropped.
private final class AnswerOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Result<T, any Error>, Never>?>

    init(_ continuation: CheckedContinuation<Result<T, any Error>, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ result: Result<T, any Error>) {
        let waiting = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: result)
    }
}

/// A database call's time limit: whether it ran out (set by its timer, read once the call ended),
/// and the connection its work holds meanwhile, which running out closes.
private final class Deadline: Sendable {
    private let state = Mutex<(expired: Bool, connection: PostgresConnection?)>((false, nil))

    /// The work's connection, closed when the time is up; throws if it is up already.
    func hold(_ connection: PostgresConnection) throws {
        let expired = state.withLock { state in
            if !state.expired { state.connection = connection }
            return state.expired
        }
        if expired { throw CancellationError() }
    }

    func release() { state.withLock { $0.connection = nil } }

    func expire() {
        let connection = state.withLock { state in
            state.expired = true
            defer { state.connection = nil }
            return state.connection
        }
        // Closing fails the statement on it at once, silent server or not; the pool drops the connection.
        if let connection { _ = connection.close() as EventLoopFuture<Void> }
    }

    var expired: Bool { state.withLock { $0.expired } }
}

extension PostgresRowSequence {
    /// Whether the statement returned any row (for `RETURNING 1` after a conditional write).
    func hasRows() async throws -> Bool {
        var any = false
        for try await _ in self { any = true }
        return any
    }
}
