import Foundation
import Logging
import MomentsModel
import MomentsSupport
import PostgresNIO

/// What the reconciler, the health checks and the metrics read.
extension JobStore {
    // MARK: Reconciler and metrics

    /// Pending jobs not touched for `quietFor` (so a job being enqueued right now is left alone), with
    /// the time each may start.
    /// One page, in id order after `after`: page on with the last id until a page comes back short.
    public func pendingJobs(quietFor: Duration, after: UUID? = nil, limit: Int = 1000) async throws(JobStoreError)
        -> [(id: UUID, runAfter: Date)]
    {
        try await database("list pending jobs") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, run_after FROM jobs
                WHERE status = 'pending' AND updated_at <= now() - make_interval(secs => \(quietFor.inSeconds))
                  AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                ORDER BY id LIMIT \(limit)
                """, logger: logger)
            var jobs: [(id: UUID, runAfter: Date)] = []
            for try await (id, runAfter) in rows.decode((UUID, Date).self) { jobs.append((id, runAfter)) }
            return jobs
        }
    }

    /// Processing jobs whose lease has lapsed: their worker died or lost touch.
    /// One page, in id order after `after`, as `pendingJobs`.
    public func lapsedLeases(after: UUID? = nil, limit: Int = 1000) async throws(JobStoreError) -> [(id: UUID, attempt: Int, maxAttempts: Int)] {
        try await database("list lapsed leases") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, attempt, max_attempts FROM jobs
                WHERE status = 'processing' AND lease_expires_at <= now()
                  AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                ORDER BY id LIMIT \(limit)
                """, logger: logger)
            var jobs: [(id: UUID, attempt: Int, maxAttempts: Int)] = []
            for try await (id, attempt, maxAttempts) in rows.decode((UUID, Int, Int).self) { jobs.append((id, attempt, maxAttempts)) }
            return jobs
        }
    }

    /// Fails a job on its last attempt whose lease lapsed more than `grace` ago (the reconciler's
    /// half of `claim`'s rule, with the same grace a takeover waits: a worker whose renewal is a
    /// moment late is not failed under it).
    public func exhaustLapsed(_ id: UUID, attempt: Int, grace: Duration) async throws(JobStoreError) -> Bool {
        try await exhaust(id, attempt: attempt, expectedStatus: .processing, grace: grace) == .exhausted
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
        try await database("count jobs") { connection, logger in
            var counts = Dictionary(uniqueKeysWithValues: JobStatus.allCases.map { ($0, 0) })
            let rows = try await connection.query("SELECT status, count(*) FROM jobs GROUP BY status", logger: logger)
            for try await (status, count) in rows.decode((String, Int).self) {
                if let status = JobStatus(rawValue: status) { counts[status] = count }
            }
            return counts
        }
    }

    /// How many of `owner`'s jobs are in `status` (the queue benchmark waits on it).
    public func countJobs(owner: String, status: JobStatus) async throws(JobStoreError) -> Int {
        try await database("count jobs") { connection, logger in
            let rows = try await connection.query(
                "SELECT count(*) FROM jobs WHERE owner = \(owner) AND status = \(status.rawValue)",
                logger: logger)
            return try await rows.decode(Int.self).first(where: { _ in true }) ?? 0
        }
    }

    /// Deletes every job of `owner` and all that belongs to them in the database (the queue
    /// benchmark's own jobs, which have no objects in storage).
    public func deleteJobs(owner: String) async throws(JobStoreError) {
        try await database("delete jobs") { connection, logger in
            try await connection.query("DELETE FROM jobs WHERE owner = \(owner)", logger: logger)
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
        -> (completed: Int, p50Seconds: Double, p95Seconds: Double, medianRealTimeFactor: Double)
    {
        try await database("summarize recent jobs") { connection, logger in
            let rows = try await connection.query(
                """
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
                (try? await database("answer") { connection, logger in try await connection.query("SELECT 1", logger: logger).hasRows() }) == true
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
}
