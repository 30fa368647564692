import Foundation
import Logging
import MomentsModel
import PostgresNIO

/// The jobs table and its history, in PostgreSQL: the source of truth the Redis queue follows.
///
/// Every status change is one SQL statement that names the status it expects and, for a worker, the
/// attempt its claim started (the fencing token) and writes its `job_events` row in the same statement.
/// A worker whose lease was taken over, or whose job was cancelled, is refused.
public struct JobStore: Sendable {
    public let client: PostgresClient
    let logger: Logger

    /// Call `run()` in a long-lived task before using the store.
    public init(configuration: DatabaseConfiguration, logger: Logger) {
        // The pool's own chatter (warnings about leases requested before `run()` starts) is kept to errors;
        // failures of our queries are logged by `database(_:_:)`.
        var background = logger
        background.logLevel = .error
        self.client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: background)
        self.logger = logger
    }

    /// Runs the connection pool until the surrounding task is cancelled.
    public func run() async {
        await client.run()
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
    /// cannot both take the last one. Failed and cancelled jobs do not count.
    public func create(_ job: NewJob, monthlyLimit: Int?) async throws(JobStoreError) -> CreateOutcome {
        let inserted = try await database("create the job") { client, logger -> CreateOutcome? in
            try await client.withTransaction(logger: logger) { connection in
                if let owner = job.owner, let limit = monthlyLimit {
                    let lock = Int64(bitPattern: Self.fnv1a("moments-quota:\(owner)"))
                    try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
                    let used = try await Self.monthlyUsage(owner: owner, on: connection, logger: logger).used
                    if used >= limit { return .quotaExceeded(used: used, limit: limit) }
                }
                let rows = try await connection.query("""
                    WITH t AS (
                        INSERT INTO jobs (id, owner, original_filename, source_key, source_size, target_duration, quality,
                                          codec, max_attempts, stage, message, callback_url)
                        VALUES (\(job.id), \(job.owner), \(job.originalFilename), \(job.sourceKey), \(job.sourceSize),
                                \(job.targetDuration), \(job.quality.rawValue), \(job.codec.rawValue), \(job.maxAttempts), 'queued', 'Waiting for a worker',
                                \(job.callbackURL))
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
        try await database("read the job") { client, logger in
            let rows = try await client.query("SELECT \(unescaped: Self.columns) FROM jobs WHERE id = \(id)", logger: logger)
            for try await row in rows { return try Self.record(row) }
            return nil
        }
    }

    /// The job's status changes, oldest first.
    public func events(_ id: UUID) async throws(JobStoreError) -> [JobEvent] {
        try await database("read the job's history") { client, logger in
            let rows = try await client.query("""
                SELECT at, from_status, to_status, attempt, worker, detail FROM job_events WHERE job_id = \(id) ORDER BY id
                """, logger: logger)
            var events: [JobEvent] = []
            for try await (at, from, to, attempt, worker, detail) in rows.decode((Date, String?, String, Int, String?, String?).self) {
                events.append(JobEvent(at: at, from: from.flatMap(JobStatus.init(rawValue:)), to: JobStatus(rawValue: to) ?? .failed,
                                       attempt: attempt, worker: worker, detail: detail))
            }
            return events
        }
    }

    // MARK: Worker transitions (fenced)

    /// Takes the job for `worker`: a `pending` job whose retry time has come, or a `processing` job
    /// whose lease has lapsed (its worker died). Starts a new attempt with a lease of `lease`.
    public func claim(_ id: UUID, worker: String, lease: Duration) async throws(JobStoreError) -> ClaimResult {
        let seconds = lease.inSeconds
        let outcome = try await database("claim the job") { client, logger in
            let rows = try await client.query("""
                WITH old AS (
                    SELECT id, status, attempt, max_attempts, run_after, lease_owner, lease_expires_at
                    FROM jobs WHERE id = \(id) FOR UPDATE),
                t AS (
                    UPDATE jobs j SET status = 'processing', attempt = j.attempt + 1, lease_owner = \(worker),
                        lease_expires_at = now() + make_interval(secs => \(seconds)), started_at = coalesce(j.started_at, now()),
                        progress = 0, stage = 'starting', message = 'Starting', updated_at = now()
                    FROM old
                    WHERE j.id = old.id AND old.attempt < old.max_attempts
                      AND ((old.status = 'pending' AND old.run_after <= now())
                           OR (old.status = 'processing' AND old.lease_expires_at <= now()))
                    RETURNING \(unescaped: Self.qualifiedColumns)),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                    SELECT old.id, old.status, 'processing', t.attempt, \(worker),
                           CASE WHEN old.status = 'processing' THEN 'lease of ' || old.lease_owner || ' lapsed; taken over'
                                ELSE 'claimed' END
                    FROM old, t)
                SELECT old.status AS old_status, old.attempt AS old_attempt, old.max_attempts AS old_max_attempts,
                       old.run_after AS old_run_after, old.lease_owner AS old_lease_owner,
                       old.lease_expires_at AS old_lease_expires_at, now() AS database_now, t.*
                FROM old LEFT JOIN t ON true
                """, logger: logger)
            for try await row in rows {
                let r = row.makeRandomAccess()
                let claimed = try r["attempt"].decode(Int?.self) != nil ? try Self.record(row) : nil
                return Optional((try r["old_status"].decode(String.self), try r["old_attempt"].decode(Int.self),
                                 try r["old_max_attempts"].decode(Int.self), try r["old_run_after"].decode(Date.self),
                                 try r["old_lease_owner"].decode(String?.self), try r["old_lease_expires_at"].decode(Date?.self),
                                 claimed, try r["database_now"].decode(Date.self)))
            }
            return nil
        }
        guard let (status, attempt, maxAttempts, runAfter, owner, expires, claimed, now) = outcome else { return .notFound }
        if let claimed {
            return .claimed(JobLease(jobID: id, attempt: claimed.attempt, worker: worker), claimed)
        }
        switch JobStatus(rawValue: status) ?? .failed {
        case .completed, .failed, .cancelled:
            return .finished(JobStatus(rawValue: status) ?? .failed)
        case .pending:
            if attempt >= maxAttempts { return try await exhaust(id, attempt: attempt, expectedStatus: .pending) }
            return .notYet(runAfter: runAfter)
        case .processing:
            if let expires, expires > now { return .heldByAnother(worker: owner ?? "?", until: expires) }
            return try await exhaust(id, attempt: attempt, expectedStatus: .processing)
        }
    }

    /// Fails a job that has no attempts left (its last worker's lease lapsed) with `exhausted_retries`.
    func exhaust(_ id: UUID, attempt: Int, expectedStatus: JobStatus) async throws(JobStoreError) -> ClaimResult {
        let message = "This video could not be processed after \(attempt) attempts. Please try again later."
        let done = try await database("fail the job") { client, logger in
            let rows = try await client.query("""
                WITH t AS (
                    UPDATE jobs SET status = 'failed', error_code = 'exhausted_retries', error_message = \(message),
                        message = \(message), lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
                    WHERE id = \(id) AND status = \(expectedStatus.rawValue) AND attempt = \(attempt)
                      AND (status = 'pending' OR lease_expires_at <= now())
                    RETURNING id, attempt, lease_owner),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, detail)
                    SELECT id, \(expectedStatus.rawValue), 'failed', attempt, 'exhausted_retries: no attempts left after the lease lapsed' FROM t)
                SELECT count(*) FROM t
                """, logger: logger)
            return try await rows.decode(Int.self).first { _ in true } == 1
        }
        if done { return .exhausted }
        // Someone else changed it meanwhile; report what it is now.
        guard let record = try await job(id) else { return .notFound }
        if record.status.isTerminal { return .finished(record.status) }
        return .heldByAnother(worker: record.leaseOwner ?? "?", until: record.leaseExpiresAt ?? .distantPast)
    }

    /// Extends the lease by `duration` from now.
    public func heartbeat(_ lease: JobLease, extendBy duration: Duration) async throws(JobStoreError) -> LeaseState {
        let held = try await database("renew the lease") { client, logger in
            try await client.query("""
                UPDATE jobs SET lease_expires_at = now() + make_interval(secs => \(duration.inSeconds)), updated_at = now()
                WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                RETURNING 1
                """, logger: logger).hasRows()
        }
        return held ? .held : try await leaseState(lease)
    }

    /// Records progress (it never goes down within an attempt) and the stage with its human message.
    public func progress(_ lease: JobLease, percent: Int, stage: String, message: String) async throws(JobStoreError) -> LeaseState {
        let percent = min(max(percent, 0), 100)
        let held = try await database("record progress") { client, logger in
            try await client.query("""
                UPDATE jobs SET progress = GREATEST(progress, \(percent)), stage = \(stage), message = \(message), updated_at = now()
                WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                RETURNING 1
                """, logger: logger).hasRows()
        }
        return held ? .held : try await leaseState(lease)
    }

    /// Whether `lease` still holds its job; a cheap read for the cancellation check.
    public func leaseState(_ lease: JobLease) async throws(JobStoreError) -> LeaseState {
        try await database("read the lease") { client, logger in
            let rows = try await client.query("SELECT status, attempt, lease_owner FROM jobs WHERE id = \(lease.jobID)", logger: logger)
            for try await (status, attempt, owner) in rows.decode((String, Int, String?).self) {
                if status == JobStatus.processing.rawValue, attempt == lease.attempt, owner == lease.worker { return LeaseState.held }
                if status == JobStatus.cancelled.rawValue, attempt == lease.attempt { return .cancelled }
                return .lost
            }
            return .lost
        }
    }

    /// Completes the job with its result. False when the lease is no longer held (taken over,
    /// cancelled): then nothing changed.
    public func complete(_ lease: JobLease, result: JobResult, message: String = "Your highlight is ready") async throws(JobStoreError) -> Bool {
        let segments = result.segments.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
        return try await database("complete the job") { client, logger in
            try await client.query("""
                WITH t AS (
                    UPDATE jobs SET status = 'completed', progress = 100, stage = 'done', message = \(message),
                        result_key = \(result.resultKey), result_size = \(result.resultSize),
                        source_duration = coalesce(\(result.sourceDuration), source_duration),
                        segments_selected = coalesce(\(result.segmentsSelected), segments_selected),
                        segments = coalesce(\(segments)::jsonb, segments),
                        error_code = NULL, error_message = NULL, lease_owner = NULL, lease_expires_at = NULL,
                        completed_at = now(), updated_at = now()
                    WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                    RETURNING id, attempt)
                INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                SELECT id, 'processing', 'completed', attempt, \(lease.worker), 'completed' FROM t
                RETURNING 1
                """, logger: logger).hasRows()
        }
    }

    /// Ends an attempt that failed. A retryable error on an attempt below `max_attempts` returns the
    /// job to `pending` until `retryDelay` has passed; a permanent error fails it at once with its own
    /// code; a retryable error on the last attempt fails it with `exhausted_retries`.
    public func fail(_ lease: JobLease, code: String, message: String, retryable: Bool,
                     retryDelay: Duration) async throws(JobStoreError) -> FailOutcome {
        let delay = retryDelay.inSeconds
        let row = try await database("record the failure") { client, logger in
            let rows = try await client.query("""
                WITH d AS (
                    SELECT id, (\(retryable) AND attempt < max_attempts) AS retry, attempt, max_attempts
                    FROM jobs WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt)
                      AND lease_owner = \(lease.worker)
                    FOR UPDATE),
                t AS (
                    UPDATE jobs j SET
                        status = CASE WHEN d.retry THEN 'pending' ELSE 'failed' END,
                        run_after = CASE WHEN d.retry THEN now() + make_interval(secs => \(delay)) ELSE j.run_after END,
                        error_code = CASE WHEN d.retry OR NOT \(retryable) THEN \(code) ELSE 'exhausted_retries' END,
                        error_message = CASE WHEN d.retry OR NOT \(retryable) THEN \(message)
                            ELSE 'Failed after ' || d.attempt || ' attempts. Last error: ' || \(message) END,
                        message = CASE WHEN d.retry THEN 'Retrying after a temporary problem'
                            WHEN NOT \(retryable) THEN \(message)
                            ELSE 'This video could not be processed after ' || d.attempt || ' attempts. Please try again later.' END,
                        stage = CASE WHEN d.retry THEN 'queued' ELSE j.stage END,
                        completed_at = CASE WHEN d.retry THEN NULL ELSE now() END,
                        lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                    FROM d WHERE j.id = d.id
                    RETURNING j.id, j.status, j.run_after, j.error_code, j.attempt),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                    SELECT id, 'processing', status, attempt, \(lease.worker), error_code || ': ' || \(message) FROM t)
                SELECT status, run_after, error_code FROM t
                """, logger: logger)
            for try await row in rows.decode((String, Date, String).self) { return Optional(row) }
            return nil
        }
        guard let (status, runAfter, errorCode) = row else { return .refused }
        return status == JobStatus.pending.rawValue ? .willRetry(at: runAfter) : .failed(code: errorCode)
    }

    /// Gives the job back at shutdown so another worker can start it at once. The attempt is not
    /// counted against the job (its `max_attempts` grows by one, visible in `job_events`).
    public func release(_ lease: JobLease) async throws(JobStoreError) -> Bool {
        try await database("give the job back") { client, logger in
            try await client.query("""
                WITH t AS (
                    UPDATE jobs SET status = 'pending', run_after = now(), max_attempts = max_attempts + 1, progress = 0,
                        stage = 'queued', message = 'Waiting for a worker', lease_owner = NULL, lease_expires_at = NULL,
                        updated_at = now()
                    WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                    RETURNING id, attempt)
                INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                SELECT id, 'processing', 'pending', attempt, \(lease.worker), 'given back at shutdown; attempt not counted' FROM t
                RETURNING 1
                """, logger: logger).hasRows()
        }
    }

    // MARK: Cancel

    /// Cancels a pending or processing job. A pending job never starts; a running one is told
    /// through `leaseState`, `heartbeat` and `progress`, which answer `.cancelled` from now on.
    public func cancel(_ id: UUID, owner: String? = nil, detail: String = "cancelled on request") async throws(JobStoreError) -> CancelOutcome {
        let row = try await database("cancel the job") { client, logger in
            let rows = try await client.query("""
                WITH old AS (
                    SELECT id, status, attempt, lease_owner FROM jobs
                    WHERE id = \(id) AND (\(owner)::text IS NULL OR owner = \(owner)) FOR UPDATE),
                t AS (
                    UPDATE jobs j SET status = 'cancelled', message = 'Cancelled', stage = 'cancelled',
                        lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
                    FROM old WHERE j.id = old.id AND old.status IN ('pending', 'processing')
                    RETURNING j.id),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                    SELECT old.id, old.status, 'cancelled', old.attempt, old.lease_owner, \(detail) FROM old, t)
                SELECT old.status, (SELECT count(*) FROM t) FROM old
                """, logger: logger)
            for try await row in rows.decode((String, Int).self) { return Optional(row) }
            return nil
        }
        guard let (status, changed) = row else { return .notFound }
        let previous = JobStatus(rawValue: status) ?? .failed
        return changed == 1 ? .cancelled(from: previous) : .alreadyFinished(previous)
    }

    // MARK: Reconciler and metrics

    /// Pending jobs not touched for `quietFor` (so a job being enqueued right now is left alone), with
    /// the time each may start.
    public func pendingJobs(quietFor: Duration, limit: Int = 1000) async throws(JobStoreError) -> [(id: UUID, runAfter: Date)] {
        try await database("list pending jobs") { client, logger in
            let rows = try await client.query("""
                SELECT id, run_after FROM jobs
                WHERE status = 'pending' AND updated_at <= now() - make_interval(secs => \(quietFor.inSeconds))
                ORDER BY run_after LIMIT \(limit)
                """, logger: logger)
            var jobs: [(id: UUID, runAfter: Date)] = []
            for try await (id, runAfter) in rows.decode((UUID, Date).self) { jobs.append((id, runAfter)) }
            return jobs
        }
    }

    /// Processing jobs whose lease has lapsed: their worker died or lost touch.
    public func lapsedLeases(limit: Int = 1000) async throws(JobStoreError) -> [(id: UUID, attempt: Int, maxAttempts: Int)] {
        try await database("list lapsed leases") { client, logger in
            let rows = try await client.query("""
                SELECT id, attempt, max_attempts FROM jobs
                WHERE status = 'processing' AND lease_expires_at <= now()
                ORDER BY lease_expires_at LIMIT \(limit)
                """, logger: logger)
            var jobs: [(id: UUID, attempt: Int, maxAttempts: Int)] = []
            for try await (id, attempt, maxAttempts) in rows.decode((UUID, Int, Int).self) { jobs.append((id, attempt, maxAttempts)) }
            return jobs
        }
    }

    /// Fails a lapsed job on its last attempt (the reconciler's half of `claim`'s rule).
    public func exhaustLapsed(_ id: UUID, attempt: Int) async throws(JobStoreError) -> Bool {
        try await exhaust(id, attempt: attempt, expectedStatus: .processing) == .exhausted
    }

    /// Runs `body` only if no other process is inside it (a transaction-scoped advisory lock, so a
    /// process that dies releases it). Returns nil when another process holds it.
    public func exclusively<T: Sendable>(_ name: String, _ body: @Sendable () async throws -> T) async throws -> T? {
        let key = Int64(bitPattern: UInt64(Self.fnv1a(name)))
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query("SELECT pg_try_advisory_xact_lock(\(key))", logger: logger)
            guard try await rows.decode(Bool.self).first(where: { _ in true }) == true else { return nil }
            return try await body()
        }
    }

    /// How many jobs are in each status.
    public func countsByStatus() async throws(JobStoreError) -> [JobStatus: Int] {
        try await database("count jobs") { client, logger in
            var counts = Dictionary(uniqueKeysWithValues: JobStatus.allCases.map { ($0, 0) })
            let rows = try await client.query("SELECT status, count(*) FROM jobs GROUP BY status", logger: logger)
            for try await (status, count) in rows.decode((String, Int).self) {
                if let status = JobStatus(rawValue: status) { counts[status] = count }
            }
            return counts
        }
    }

    /// Calls `changed` with the id of every job whose status, progress or message changes (NOTIFY on
    /// the `moments_jobs` channel, sent by a trigger), until the task is cancelled or the connection drops.
    public func listenForChanges(_ changed: @Sendable (UUID) async -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: "moments_jobs") { notifications in
                for try await notification in notifications {
                    if let id = UUID(uuidString: notification.payload) { await changed(id) }
                }
            }
        }
    }

    /// Processing figures of the jobs completed within `window`: count, median and 95th percentile
    /// processing time (start of the first attempt to the end), median real-time factor.
    public func recentProcessing(within window: Duration) async throws(JobStoreError)
        -> (completed: Int, p50Seconds: Double, p95Seconds: Double, medianRealTimeFactor: Double) {
        try await database("summarize recent jobs") { client, logger in
            let rows = try await client.query("""
                SELECT count(*)::int,
                       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at)), 0),
                       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at)), 0),
                       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY source_duration
                           / greatest(extract(epoch FROM completed_at - started_at), 0.001)), 0)
                FROM jobs
                WHERE status = 'completed' AND completed_at > now() - make_interval(secs => \(window.inSeconds))
                """, logger: logger)
            for try await row in rows.decode((Int, Double, Double, Double).self) {
                return (completed: row.0, p50Seconds: row.1, p95Seconds: row.2, medianRealTimeFactor: row.3)
            }
            return (completed: 0, p50Seconds: 0, p95Seconds: 0, medianRealTimeFactor: 0)
        }
    }

    /// Whether PostgreSQL answers within `timeout` (for readiness checks: while the server is down
    /// the pool keeps a query waiting for a connection, so the check must not wait with it).
    public func isReachable(timeout: Duration = .seconds(3)) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                (try? await database("answer") { client, logger in try await client.query("SELECT 1", logger: logger).hasRows() }) == true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    // MARK: Plumbing

    static let columns = """
        id, owner, status, progress, stage, message, error_code, error_message, original_filename, source_key, source_size,
        result_key, result_size, target_duration, quality, codec, source_duration, segments_selected, attempt, max_attempts,
        run_after, lease_owner, lease_expires_at, created_at, started_at, completed_at, updated_at, segments::text AS segments,
        callback_url, source_deleted_at, result_expired_at
        """

    /// The same columns, qualified for statements that join `jobs j` with another relation.
    static let qualifiedColumns = columns.split(separator: ",").map { "j." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .joined(separator: ", ")

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
            segments: try r["segments"].decode(String?.self).flatMap { try? JSONDecoder().decode([SelectedSegment].self, from: Data($0.utf8)) },
            callbackURL: try r["callback_url"].decode(String?.self),
            sourceDeletedAt: try r["source_deleted_at"].decode(Date?.self),
            resultExpiredAt: try r["result_expired_at"].decode(Date?.self))
    }

    /// Runs database work, turning any failure into a `JobStoreError` whose message says what could
    /// not be done; the full error (SQL state, server message) goes to the log only.
    ///
    /// A call gets `timeout` (10 s) to finish: while PostgreSQL is down the pool keeps requests
    /// waiting for a connection, and a request to the API must end in a 503, not hang with them.
    func database<T: Sendable>(_ what: String, timeout: Duration = .seconds(10),
                               _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> T) async throws(JobStoreError) -> T {
        let client = self.client, logger = self.logger
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await body(client, logger) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw JobStoreError(.unavailable, "The job database did not answer in time to \(what).")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch let error as JobStoreError {
            if error.message.contains("in time") { logger.error("database call timed out", metadata: ["operation": "\(what)"]) }
            throw error
        } catch is CancellationError {
            throw JobStoreError(.unavailable, "The job database call to \(what) was cancelled.")
        } catch {
            logger.error("database call failed", metadata: ["operation": "\(what)", "error": "\(String(reflecting: error))"])
            throw JobStoreError(.unavailable, "The job database could not \(what).")
        }
    }

    static func fnv1a(_ string: String) -> UInt64 {
        string.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

extension PostgresRowSequence {
    /// Whether the statement returned any row (for `RETURNING 1` after a conditional write).
    func hasRows() async throws -> Bool {
        var any = false
        for try await _ in self { any = true }
        return any
    }
}
