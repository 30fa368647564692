import Foundation
import PostgresNIO

/// The spans the console charts: the last hour by minute, day by half hour, week by six hours.
public enum ThroughputRange: String, Sendable, CaseIterable {
    case hour, day, week

    /// The width of one bar.
    public var bucketSeconds: Int {
        switch self {
        case .hour: 60
        case .day: 1800
        case .week: 6 * 3600
        }
    }

    public var buckets: Int {
        switch self {
        case .hour: 60
        case .day: 48
        case .week: 28
        }
    }
}

/// Jobs that ended within one bucket, and how long the completed ones took.
public struct ThroughputBucket: Sendable, Equatable {
    public var start: Date
    public var completed = 0
    public var failed = 0
    public var cancelled = 0
    /// Processing time (start of the first attempt to the end) of the completed ones: median and 95th percentile.
    public var p50Seconds: Double?
    public var p95Seconds: Double?
    /// Median seconds of source per second of processing.
    public var realTimeFactor: Double?

    public init(start: Date) { self.start = start }
}

extension JobStore {
    /// One bucket per `range.bucketSeconds`, oldest first, ending with the one now is in; buckets
    /// without jobs are there too, empty. Read through `jobs_finished` (completed_at).
    public func throughput(_ range: ThroughputRange, now: Date = Date()) async throws(JobStoreError) -> [ThroughputBucket] {
        let width = range.bucketSeconds
        let lastSlot = Int64((now.timeIntervalSince1970 / Double(width)).rounded(.down))
        let firstSlot = lastSlot - Int64(range.buckets - 1)
        let from = Date(timeIntervalSince1970: Double(firstSlot * Int64(width)))
        var buckets = (firstSlot...lastSlot).map { ThroughputBucket(start: Date(timeIntervalSince1970: Double($0 * Int64(width)))) }
        let rows = try await database("chart throughput") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT floor(extract(epoch FROM completed_at) / \(width))::bigint AS slot,
                       count(*) FILTER (WHERE status = 'completed')::int,
                       count(*) FILTER (WHERE status = 'failed')::int,
                       count(*) FILTER (WHERE status = 'cancelled')::int,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at))
                           FILTER (WHERE status = 'completed'),
                       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at))
                           FILTER (WHERE status = 'completed'),
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY source_duration
                           / greatest(extract(epoch FROM completed_at - started_at), 0.001)) FILTER (WHERE status = 'completed')
                FROM jobs WHERE completed_at IS NOT NULL AND completed_at >= \(from)
                GROUP BY 1
                """, logger: logger)
            var found: [(Int64, Int, Int, Int, Double?, Double?, Double?)] = []
            for try await row in rows.decode((Int64, Int, Int, Int, Double?, Double?, Double?).self) { found.append(row) }
            return found
        }
        for (slot, completed, failed, cancelled, p50, p95, factor) in rows where slot >= firstSlot && slot <= lastSlot {
            let index = Int(slot - firstSlot)
            buckets[index].completed = completed
            buckets[index].failed = failed
            buckets[index].cancelled = cancelled
            buckets[index].p50Seconds = p50
            buckets[index].p95Seconds = p95
            buckets[index].realTimeFactor = factor
        }
        return buckets
    }

    /// Jobs waiting in PostgreSQL's view: pending, of which waiting out a retry delay, and the oldest's wait.
    public func waiting() async throws(JobStoreError) -> (pending: Int, delayed: Int, oldestWaitSeconds: Double) {
        try await database("count waiting jobs") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT count(*)::int, (count(*) FILTER (WHERE run_after > now()))::int,
                       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
                FROM jobs WHERE status = 'pending'
                """, logger: logger)
            for try await row in rows.decode((Int, Int, Double).self) { return (row.0, row.1, row.2) }
            return (0, 0, 0)
        }
    }
}
