import Foundation
import MomentsModel
import PostgresNIO

/// What the retention sweep reads and writes. Objects always go before the rows that name them:
/// a row is deleted only once `result_expired_at` says its objects are gone, so storage never keeps
/// an object no row points to.
extension JobStore {
    /// Finished jobs (completed, failed or cancelled) that ended before `cutoff`, or that their
    /// owner erased, and still have objects in storage, oldest first.
    public func jobsWithObjects(finishedBefore cutoff: Date, limit: Int = 100) async throws(JobStoreError) -> [JobRecord] {
        try await database("find jobs whose objects expire") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM jobs
                WHERE (completed_at < \(cutoff) OR erased_at IS NOT NULL) AND result_expired_at IS NULL
                  AND status IN ('completed', 'failed', 'cancelled')
                ORDER BY completed_at LIMIT \(limit)
                """, logger: logger)
            var jobs: [JobRecord] = []
            for try await row in rows { jobs.append(try Self.record(row)) }
            return jobs
        }
    }

    /// Records that the job's highlight and source were deleted from storage. False if the job is
    /// gone or was already marked.
    @discardableResult
    public func markObjectsExpired(_ id: UUID) async throws(JobStoreError) -> Bool {
        try await database("record expired objects") { connection, logger in
            try await connection.query(
                """
                UPDATE jobs SET result_expired_at = now(), source_deleted_at = coalesce(source_deleted_at, now())
                WHERE id = \(id) AND result_expired_at IS NULL RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// Records that the job's source was deleted from storage after its highlight was stored.
    @discardableResult
    public func markSourceDeleted(_ id: UUID) async throws(JobStoreError) -> Bool {
        try await database("record the deleted source") { connection, logger in
            try await connection.query(
                """
                UPDATE jobs SET source_deleted_at = now() WHERE id = \(id) AND source_deleted_at IS NULL RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// Deletes up to `limit` rows of jobs that ended before `cutoff` and whose objects are already
    /// gone, with their events and webhook deliveries. Returns how many were deleted.
    public func deleteExpiredJobs(finishedBefore cutoff: Date, limit: Int = 500) async throws(JobStoreError) -> Int {
        try await database("delete expired jobs") { connection, logger in
            let rows = try await connection.query(
                """
                DELETE FROM jobs WHERE id IN (
                    SELECT id FROM jobs
                    WHERE completed_at < \(cutoff) AND result_expired_at IS NOT NULL AND status IN ('completed', 'failed', 'cancelled')
                    ORDER BY completed_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING 1
                """, logger: logger)
            var count = 0
            for try await _ in rows { count += 1 }
            return count
        }
    }

    /// The source, result, poster, thumbnail and uploaded music keys of the jobs `ids` that still exist (what storage may keep).
    public func objectKeys(ofJobs ids: [UUID]) async throws(JobStoreError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try await database("read the jobs' object keys") { connection, logger in
            let rows = try await connection.query(
                "SELECT source_key, result_key, poster_key, thumbnails_key, music_key FROM jobs WHERE id = ANY(\(ids))", logger: logger)
            var keys = Set<String>()
            for try await (source, result, poster, thumbnails, music) in rows.decode((String, String?, String?, String?, String?).self) {
                keys.insert(source)
                keys.formUnion([result, poster, thumbnails, music].compactMap { $0 })
            }
            return keys
        }
    }
}
