import Foundation
import MomentsModel
import PostgresNIO

/// The answer to `requeue`.
public enum RequeueOutcome: Sendable, Equatable {
    /// Pending again, with `attempts` more attempts than it has used.
    case requeued(JobRecord)
    /// Only failed jobs are retried by an operator; this one is in `status`.
    case notFailed(JobStatus)
    case notFound
}

extension JobStore {
    /// Jobs newest first, optionally of one status, created since a time, of one owner (the first page of `listJobs(_:)`).
    public func listJobs(
        status: JobStatus? = nil, since: Date? = nil, owner: String? = nil,
        limit: Int = 50
    ) async throws(JobStoreError) -> [JobRecord] {
        try await listJobs(JobFilter(statuses: status.map { [$0] } ?? [], owner: owner, createdFrom: since), limit: limit).jobs
    }

    /// Puts a failed job back to `pending` for an operator (`moments jobs retry`): its error is
    /// cleared, it gets `attempts` more attempts, and the change is recorded in `job_events`. The
    /// caller queues it in Redis afterwards (or the reconciler does).
    public func requeue(_ id: UUID, attempts: Int = 3, detail: String = "retried by an operator") async throws(JobStoreError) -> RequeueOutcome {
        let outcome = try await database("re-queue the job") { connection, logger -> RequeueOutcome in
            let rows = try await connection.query(
                """
                WITH old AS (SELECT id, status, attempt FROM jobs WHERE id = \(id) FOR UPDATE),
                t AS (
                    UPDATE jobs j SET status = 'pending', run_after = now(), max_attempts = j.attempt + \(attempts),
                        progress = 0, stage = 'queued', message = 'Waiting for a worker', error_code = NULL,
                        error_message = NULL, completed_at = NULL, updated_at = now()
                    FROM old WHERE j.id = old.id AND old.status = 'failed'
                    RETURNING \(unescaped: Self.qualifiedColumns)),
                e AS (
                    INSERT INTO job_events (job_id, from_status, to_status, attempt, detail)
                    SELECT t.id, 'failed', 'pending', t.attempt, \(detail) FROM t)
                SELECT old.status AS old_status, t.* FROM old LEFT JOIN t ON true
                """, logger: logger)
            for try await row in rows {
                let r = row.makeRandomAccess()
                if try r["attempt"].decode(Int?.self) != nil { return .requeued(try Self.record(row)) }
                return .notFailed(JobStatus(rawValue: try r["old_status"].decode(String.self)) ?? .failed)
            }
            return .notFound
        }
        return outcome
    }
}

/// The answer to `deleteJob`.
public enum DeleteOutcome: Sendable, Equatable {
    /// The row is gone, with its events and webhook deliveries; these objects are the caller's to delete.
    case deleted(objectKeys: [String])
    /// Only jobs that ended are deleted (cancel a pending or running one first).
    case notFinished(JobStatus)
    case notFound
}

extension JobStore {
    /// Deletes an ended job's row; its events and webhook deliveries go with it (ON DELETE
    /// CASCADE). Answers the keys of the objects it still has (its source unless the source was
    /// deleted after success; its highlight, poster and thumbnails unless retention removed them),
    /// for the caller to delete from storage (any it cannot are orphans that the retention sweep
    /// deletes a day later).
    public func deleteJob(_ id: UUID) async throws(JobStoreError) -> DeleteOutcome {
        try await database("delete the job") { connection, logger -> DeleteOutcome in
            let rows = try await connection.query(
                """
                WITH old AS (SELECT id, status FROM jobs WHERE id = \(id)),
                d AS (DELETE FROM jobs j USING old WHERE j.id = old.id AND old.status IN ('completed', 'failed', 'cancelled')
                      RETURNING j.source_key, j.source_deleted_at IS NOT NULL AS source_gone, j.result_expired_at IS NOT NULL AS result_gone,
                                j.result_key, j.poster_key, j.thumbnails_key)
                SELECT old.status, d.source_key, d.source_gone, d.result_gone, d.result_key, d.poster_key, d.thumbnails_key
                FROM old LEFT JOIN d ON true
                """, logger: logger)
            for try await (status, source, sourceGone, resultGone, result, poster, thumbnails)
                in rows.decode((String, String?, Bool?, Bool?, String?, String?, String?).self)
            {
                guard let source else { return .notFinished(JobStatus(rawValue: status) ?? .pending) }
                let outputs = resultGone == true ? [] : [result, poster, thumbnails].compactMap { $0 }
                return .deleted(objectKeys: (sourceGone == true ? [] : [source]) + outputs)
            }
            return .notFound
        }
    }

    /// Records whether the queue is paused (the truth; Redis keeps a copy for the workers).
    public func setQueuePaused(_ paused: Bool) async throws(JobStoreError) {
        try await database(paused ? "pause the queue" : "resume the queue") { connection, logger in
            try await connection.query("UPDATE queue_control SET paused = \(paused), changed_at = now()", logger: logger)
        }
    }

    /// Whether the queue is paused.
    public func isQueuePaused() async throws(JobStoreError) -> Bool {
        try await database("read whether the queue is paused") { connection, logger in
            for try await paused in try await connection.query("SELECT paused FROM queue_control", logger: logger).decode(Bool.self) {
                return paused
            }
            return false
        }
    }
}
