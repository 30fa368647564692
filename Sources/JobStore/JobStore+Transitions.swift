import Foundation
import Logging
import MomentsModel
import MomentsSupport
import PostgresNIO

/// A worker's transitions, each fenced by the attempt its claim started, and cancel.
extension JobStore {
    // MARK: Worker transitions (fenced)

    /// Takes the job for `worker`: a `pending` job whose retry time has come, or a `processing` job
    /// whose lease has lapsed (its worker died). Starts a new attempt with a lease of `lease`.
    public func claim(_ id: UUID, worker: String, lease: Duration) async throws(JobStoreError) -> ClaimResult {
        let seconds = lease.inSeconds
        let outcome = try await database("claim the job") { connection, logger in
            let rows = try await connection.query(
                """
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
                return Optional(
                    (
                        try r["old_status"].decode(String.self), try r["old_attempt"].decode(Int.self),
                        try r["old_max_attempts"].decode(Int.self), try r["old_run_after"].decode(Date.self),
                        try r["old_lease_owner"].decode(String?.self), try r["old_lease_expires_at"].decode(Date?.self),
                        claimed, try r["database_now"].decode(Date.self)
                    ))
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
    func exhaust(_ id: UUID, attempt: Int, expectedStatus: JobStatus, grace: Duration = .zero) async throws(JobStoreError) -> ClaimResult {
        let message = "This video could not be processed after \(attempt) attempts. Please try again later."
        let done = try await database("fail the job") { connection, logger in
            let rows = try await connection.query(
                """
                WITH t AS (
                    UPDATE jobs SET status = 'failed', error_code = 'exhausted_retries', error_message = \(message),
                        message = \(message), lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
                    WHERE id = \(id) AND status = \(expectedStatus.rawValue) AND attempt = \(attempt)
                      AND (status = 'pending' OR lease_expires_at <= now() - make_interval(secs => \(grace.inSeconds)))
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

    /// Extends the lease by `duration` from now, giving up (`unavailable`) after `timeout`: a
    /// worker renews within what is left of its lease, so that a silent database cannot keep it
    /// working on a job another worker may take over meanwhile.
    public func heartbeat(_ lease: JobLease, extendBy duration: Duration, timeout: Duration = .seconds(10)) async throws(JobStoreError) -> LeaseState
    {
        let end = ContinuousClock.now + timeout
        let held = try await database("renew the lease", timeout: timeout) { connection, logger in
            try await connection.query(
                """
                UPDATE jobs SET lease_expires_at = now() + make_interval(secs => \(duration.inSeconds)), updated_at = now()
                WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                RETURNING 1
                """, logger: logger
            ).hasRows()
        }
        return held ? .held : try await leaseState(lease, timeout: max(end - .now, .milliseconds(100)))
    }

    /// Records progress (it never goes down within an attempt) and the stage with its human message.
    public func progress(_ lease: JobLease, percent: Int, stage: String, message: String) async throws(JobStoreError) -> LeaseState {
        let percent = min(max(percent, 0), 100)
        let held = try await database("record progress") { connection, logger in
            try await connection.query(
                """
                UPDATE jobs SET progress = GREATEST(progress, \(percent)), stage = \(stage), message = \(message), updated_at = now()
                WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                RETURNING 1
                """, logger: logger
            ).hasRows()
        }
        return held ? .held : try await leaseState(lease)
    }

    /// Whether `lease` still holds its job; a cheap read for the cancellation check.
    public func leaseState(_ lease: JobLease, timeout: Duration = .seconds(10)) async throws(JobStoreError) -> LeaseState {
        try await database("read the lease", timeout: timeout) { connection, logger in
            let rows = try await connection.query("SELECT status, attempt, lease_owner FROM jobs WHERE id = \(lease.jobID)", logger: logger)
            for try await (status, attempt, owner) in rows.decode((String, Int, String?).self) {
                if status == JobStatus.processing.rawValue, attempt == lease.attempt, owner == lease.worker { return LeaseState.held }
                if status == JobStatus.cancelled.rawValue, attempt == lease.attempt { return .cancelled }
                if status == JobStatus.completed.rawValue, attempt == lease.attempt { return .completed }
                return .lost
            }
            return .lost
        }
    }

    /// Completes the job with its result. False when the lease is no longer held (taken over,
    /// cancelled): then nothing changed.
    public func complete(_ lease: JobLease, result: JobResult, message: String = "Your highlight is ready") async throws(JobStoreError) -> Bool {
        let segments = result.segments.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
        return try await database("complete the job") { connection, logger in
            try await connection.query(
                """
                WITH t AS (
                    UPDATE jobs SET status = 'completed', progress = 100, stage = 'done', message = \(message),
                        result_key = \(result.resultKey), result_size = \(result.resultSize),
                        source_duration = coalesce(\(result.sourceDuration), source_duration),
                        segments_selected = coalesce(\(result.segmentsSelected), segments_selected),
                        segments = coalesce(\(segments)::jsonb, segments),
                        source_media = coalesce(\(Self.json(result.sourceMedia))::jsonb, source_media),
                        poster_key = \(result.posterKey), thumbnails_key = \(result.thumbnailsKey),
                        error_code = NULL, error_message = NULL, lease_owner = NULL, lease_expires_at = NULL,
                        completed_at = now(), updated_at = now()
                    WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                    RETURNING id, attempt)
                INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                SELECT id, 'processing', 'completed', attempt, \(lease.worker), 'completed' FROM t
                RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// Ends an attempt that failed. A retryable error on an attempt below `max_attempts` returns the
    /// job to `pending` until `retryDelay` has passed; a permanent error fails it at once with its own
    /// code; a retryable error on the last attempt fails it with `exhausted_retries`.
    /// `diagnostics` go to the attempt's `job_events` row only. A failure with a `finalMessage` (one
    /// that the same file will meet again) keeps its own code once no attempt is left, and says
    /// that message instead of the generic "try again later".
    public func fail(
        _ lease: JobLease, code: String, message: String, retryable: Bool, retryDelay: Duration,
        diagnostics: String? = nil, finalMessage: String? = nil
    ) async throws(JobStoreError) -> FailOutcome {
        let delay = retryDelay.inSeconds
        let row = try await database("record the failure") { connection, logger in
            let rows = try await connection.query(
                """
                WITH d AS (
                    SELECT id, (\(retryable) AND attempt < max_attempts) AS retry, attempt, max_attempts
                    FROM jobs WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt)
                      AND lease_owner = \(lease.worker)
                    FOR UPDATE),
                t AS (
                    UPDATE jobs j SET
                        status = CASE WHEN d.retry THEN 'pending' ELSE 'failed' END,
                        run_after = CASE WHEN d.retry THEN now() + make_interval(secs => \(delay)) ELSE j.run_after END,
                        error_code = CASE WHEN d.retry OR NOT \(retryable) OR \(finalMessage)::text IS NOT NULL THEN \(code)
                            ELSE 'exhausted_retries' END,
                        error_message = CASE WHEN d.retry OR NOT \(retryable) THEN \(message)
                            ELSE 'Failed after ' || d.attempt || ' attempts. Last error: ' || \(message) END,
                        message = CASE WHEN d.retry THEN 'Retrying after a temporary problem'
                            WHEN NOT \(retryable) THEN \(message)
                            ELSE coalesce(\(finalMessage),
                                'This video could not be processed after ' || d.attempt || ' attempts. Please try again later.') END,
                        stage = CASE WHEN d.retry THEN 'queued' ELSE j.stage END,
                        completed_at = CASE WHEN d.retry THEN NULL ELSE now() END,
                        lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                    FROM d WHERE j.id = d.id
                    RETURNING j.id, j.status, j.run_after, j.error_code, j.attempt),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail, diagnostics)
                    SELECT id, 'processing', status, attempt, \(lease.worker), error_code || ': ' || \(message), \(diagnostics) FROM t)
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
        try await database("give the job back") { connection, logger in
            try await connection.query(
                """
                WITH t AS (
                    UPDATE jobs SET status = 'pending', run_after = now(), max_attempts = max_attempts + 1, progress = 0,
                        stage = 'queued', message = 'Waiting for a worker', lease_owner = NULL, lease_expires_at = NULL,
                        updated_at = now()
                    WHERE id = \(lease.jobID) AND status = 'processing' AND attempt = \(lease.attempt) AND lease_owner = \(lease.worker)
                    RETURNING id, attempt)
                INSERT INTO job_events (job_id, from_status, to_status, attempt, worker, detail)
                SELECT id, 'processing', 'pending', attempt, \(lease.worker), 'given back at shutdown; attempt not counted' FROM t
                RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    // MARK: Cancel

    /// Cancels a pending or processing job. A pending job never starts; a running one is told
    /// through `leaseState`, `heartbeat` and `progress`, which answer `.cancelled` from now on.
    public func cancel(_ id: UUID, owner: String? = nil, detail: String = "cancelled on request") async throws(JobStoreError) -> CancelOutcome {
        let row = try await database("cancel the job") { connection, logger in
            let rows = try await connection.query(
                """
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
}
