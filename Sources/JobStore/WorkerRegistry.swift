import Foundation
import MomentsModel
import MomentsSupport
import PostgresNIO

/// One worker process as the registry knows it.
public struct WorkerRecord: Sendable, Equatable {
    public var id: String
    public var host: String
    public var pid: Int
    public var version: String
    public var concurrency: Int
    public var startedAt: Date
    public var lastHeartbeatAt: Date
    /// Set when the worker stopped cleanly; nil for one that runs, or that died.
    public var stoppedAt: Date?
    /// Jobs it ran at its last heartbeat.
    public var running: Int
    /// Attempts it finished (any outcome) since it started.
    public var jobsFinished: Int64
    /// The jobs it holds leases on now.
    public var currentJobs: [UUID]
    /// Heartbeat within the liveness window and not stopped.
    public var alive: Bool

    /// `alive`, `stopped` (cleanly) or `lost` (its heartbeats stopped without a clean stop).
    public var state: String { alive ? "alive" : stoppedAt != nil ? "stopped" : "lost" }
}

/// What a worker says about itself when it starts.
public struct WorkerIdentity: Sendable, Equatable {
    public var id: String
    public var host: String
    public var pid: Int
    public var version: String
    public var concurrency: Int

    public init(id: String, host: String, pid: Int, version: String, concurrency: Int) {
        self.id = id
        self.host = host
        self.pid = pid
        self.version = version
        self.concurrency = concurrency
    }
}

extension JobStore {
    /// A worker is alive while its last heartbeat is younger than this.
    public static let workerLivenessWindow: Duration = .seconds(30)

    /// Registers the worker (again, after a database outage: the row is upserted) and forgets
    /// workers that have not been heard of for a week.
    public func registerWorker(_ worker: WorkerIdentity) async throws(JobStoreError) {
        try await database("register the worker") { connection, logger in
            try await connection.query(
                """
                INSERT INTO workers (id, host, pid, version, concurrency) VALUES
                    (\(worker.id), \(worker.host), \(worker.pid), \(worker.version), \(worker.concurrency))
                ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = now(), stopped_at = NULL
                """, logger: logger)
            try await connection.query("DELETE FROM workers WHERE last_heartbeat_at < now() - interval '7 days'", logger: logger)
        }
    }

    /// The worker is alive, running `running` jobs, and has finished `finished` since it started.
    /// False when the registry does not know it (register again).
    public func workerHeartbeat(_ id: String, running: Int, finished: Int64) async throws(JobStoreError) -> Bool {
        try await database("record the worker's heartbeat") { connection, logger in
            try await connection.query(
                """
                UPDATE workers SET last_heartbeat_at = now(), running = \(running), jobs_finished = \(finished), stopped_at = NULL
                WHERE id = \(id) RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// The worker stopped cleanly.
    public func workerStopped(_ id: String, finished: Int64) async throws(JobStoreError) {
        try await database("record the worker's stop") { connection, logger -> Void in
            try await connection.query(
                """
                UPDATE workers SET stopped_at = now(), last_heartbeat_at = now(), running = 0, jobs_finished = \(finished) WHERE id = \(id)
                """, logger: logger)
        }
    }

    /// Every worker heard of within `within` (a day): live ones first, then the most recent.
    public func workers(within: Duration = .seconds(86_400)) async throws(JobStoreError) -> [WorkerRecord] {
        let window = Self.workerLivenessWindow.inSeconds
        return try await database("list workers") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT w.id, w.host, w.pid, w.version, w.concurrency, w.started_at, w.last_heartbeat_at, w.stopped_at, w.running,
                       w.jobs_finished, coalesce(array_agg(j.id::text ORDER BY j.started_at) FILTER (WHERE j.id IS NOT NULL), '{}'),
                       (w.stopped_at IS NULL AND w.last_heartbeat_at > now() - make_interval(secs => \(window))) AS alive
                FROM workers w LEFT JOIN jobs j ON j.status = 'processing' AND j.lease_owner = w.id
                WHERE w.last_heartbeat_at > now() - make_interval(secs => \(within.inSeconds))
                GROUP BY w.id
                ORDER BY alive DESC, w.last_heartbeat_at DESC
                """, logger: logger)
            var workers: [WorkerRecord] = []
            for try await row in rows.decode((String, String, Int, String, Int, Date, Date, Date?, Int, Int64, [String], Bool).self) {
                workers.append(
                    WorkerRecord(
                        id: row.0, host: row.1, pid: row.2, version: row.3, concurrency: row.4, startedAt: row.5,
                        lastHeartbeatAt: row.6, stoppedAt: row.7, running: row.8, jobsFinished: row.9,
                        currentJobs: row.10.compactMap(UUID.init(uuidString:)), alive: row.11))
            }
            return workers
        }
    }
}
