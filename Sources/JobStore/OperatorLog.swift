import Foundation
import MomentsModel
import MomentsSupport
import PostgresNIO

/// What an operator can do to jobs and the queue.
public enum OperatorAction: String, Sendable, CaseIterable, Codable {
    case retry, cancel, delete, pause, resume, redeliver
    /// What an app asks for itself (the actor is `device:<id>`): a job's files erased, or the device
    /// and everything of it.
    case erase
    case eraseDevice = "erase_device"

    /// The statuses a job must be in for the action to apply to it.
    public var applicableStatuses: [JobStatus] {
        switch self {
        case .retry: [.failed]
        case .cancel: [.pending, .processing]
        case .delete: [.completed, .failed, .cancelled]
        case .pause, .resume, .redeliver, .erase, .eraseDevice: []
        }
    }

    /// `retried`, `cancelled`, `deleted`, …
    public var pastTense: String {
        switch self {
        case .retry: "retried"
        case .cancel: "cancelled"
        case .delete: "deleted"
        case .pause: "paused"
        case .resume: "resumed"
        case .redeliver: "redelivered"
        case .erase, .eraseDevice: "erased"
        }
    }
}

/// One row of `admin_operations`: an operator's action and, for a bulk action, its progress.
public struct OperationRecord: Sendable, Equatable {
    public enum State: String, Sendable { case running, done, failed, stopped }

    public var id: Int64
    /// Who: `console:<name>` or `cli:<user>@<host>`.
    public var actor: String
    public var action: OperatorAction
    /// The job of a single-job action.
    public var jobID: UUID?
    /// The jobs of a bulk action.
    public var filter: JobFilter?
    public var state: State
    /// Jobs the filter matched when the bulk action was confirmed.
    public var matched: Int?
    public var done: Int
    /// Matched, but no longer in a status the action applies to when their turn came.
    public var skipped: Int
    public var failed: Int
    public var message: String?
    /// A bulk action acts only on jobs created before this.
    public var cutoff: Date
    public var cursor: JobCursor?
    public var runner: String?
    public var createdAt: Date
    public var finishedAt: Date?

    public var isBulk: Bool { filter != nil }
}

extension JobStore {
    /// Writes the audit record of an action on one job or the queue, already finished.
    @discardableResult
    public func recordOperation(
        actor: String, action: OperatorAction, job: UUID? = nil, succeeded: Bool = true,
        message: String
    ) async throws(JobStoreError) -> Int64 {
        try await database("record the operator's action") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO admin_operations (actor, action, job_id, state, matched, done, failed, message, finished_at)
                VALUES (\(actor), \(action.rawValue), \(job), \(succeeded ? "done" : "failed"), 1, \(succeeded ? 1 : 0),
                        \(succeeded ? 0 : 1), \(message), now())
                RETURNING id
                """, logger: logger)
            for try await id in rows.decode(Int64.self) { return id }
            throw JobStoreError(.unavailable, "The audit record was not written.")
        }
    }

    /// Records a bulk action over `filter` (already narrowed to the statuses it applies to), to be
    /// run by `runner` (nil: by whichever API node claims it first). It will act on jobs created
    /// before now, so jobs that arrive meanwhile are not swept along.
    public func startBulk(
        actor: String, action: OperatorAction, filter: JobFilter, matched: Int,
        runner: String?
    ) async throws(JobStoreError) -> OperationRecord {
        let json = String(decoding: (try? JSONEncoder.operations.encode(filter)) ?? Data("{}".utf8), as: UTF8.self)
        return try await database("start the bulk action") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO admin_operations (actor, action, filter, matched, message, runner, heartbeat_at)
                VALUES (\(actor), \(action.rawValue), \(json)::jsonb, \(matched), \(filter.summary), \(runner),
                        CASE WHEN \(runner)::text IS NULL THEN NULL ELSE now() END)
                RETURNING \(unescaped: Self.operationColumns)
                """, logger: logger)
            for try await row in rows { return try Self.operation(row) }
            throw JobStoreError(.unavailable, "The bulk action was not recorded.")
        }
    }

    /// Takes a running bulk action nobody runs: one not yet claimed, or whose runner has not
    /// reported for `staleAfter` (its API node died). Several nodes never take the same one.
    public func claimBulk(runner: String, staleAfter: Duration) async throws(JobStoreError) -> OperationRecord? {
        try await database("claim a bulk action") { connection, logger in
            let rows = try await connection.query(
                """
                UPDATE admin_operations o SET runner = \(runner), heartbeat_at = now()
                WHERE o.id = (SELECT id FROM admin_operations
                              WHERE state = 'running' AND filter IS NOT NULL
                                AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => \(staleAfter.inSeconds)))
                              ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.operationColumns)
                """, logger: logger)
            for try await row in rows { return try Self.operation(row) }
            return nil
        }
    }

    /// The next `limit` jobs of a bulk action, after its cursor, newest first.
    public func bulkBatch(_ operation: OperationRecord, limit: Int) async throws(JobStoreError) -> [(id: UUID, createdAt: Date)] {
        var bounded = operation.filter ?? JobFilter()
        bounded.createdBefore = min(bounded.createdBefore ?? operation.cutoff, operation.cutoff)
        let filter = bounded, cursor = operation.cursor
        return try await database("read the bulk action's next jobs") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, created_at FROM jobs
                WHERE \(filter: filter)
                  AND (\(cursor?.createdAt)::timestamptz IS NULL OR (created_at, id) < (\(cursor?.createdAt), \(cursor?.id)))
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: logger)
            var batch: [(id: UUID, createdAt: Date)] = []
            for try await (id, created) in rows.decode((UUID, Date).self) { batch.append((id, created)) }
            return batch
        }
    }

    /// Records progress, a job or a batch of them (and the runner's heartbeat). False when the
    /// action is no longer this runner's to run: an operator stopped it, or another node took it over.
    public func advanceBulk(
        _ id: Int64, runner: String, cursor: JobCursor, done: Int, skipped: Int,
        failed: Int
    ) async throws(JobStoreError) -> Bool {
        try await database("record the bulk action's progress") { connection, logger in
            try await connection.query(
                """
                UPDATE admin_operations SET cursor_at = \(cursor.createdAt), cursor_id = \(cursor.id), done = done + \(done),
                    skipped = skipped + \(skipped), failed = failed + \(failed), heartbeat_at = now()
                WHERE id = \(id) AND runner = \(runner) AND state = 'running'
                RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// The runner's heartbeat while a job is in hand. False when the action is no longer its own.
    @discardableResult
    public func touchBulk(_ id: Int64, runner: String) async throws(JobStoreError) -> Bool {
        try await database("record the bulk action's heartbeat") { connection, logger in
            try await connection.query(
                """
                UPDATE admin_operations SET heartbeat_at = now() WHERE id = \(id) AND runner = \(runner) AND state = 'running' RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// Ends a bulk action (`done`, or `failed` with why).
    public func finishBulk(_ id: Int64, runner: String, state: OperationRecord.State, message: String?) async throws(JobStoreError) {
        try await database("finish the bulk action") { connection, logger -> Void in
            try await connection.query(
                """
                UPDATE admin_operations SET state = \(state.rawValue), finished_at = now(), heartbeat_at = now(),
                    message = coalesce(\(message), message)
                WHERE id = \(id) AND runner = \(runner) AND state = 'running'
                """, logger: logger)
        }
    }

    /// An operator stops a running bulk action: its runner stops after the batch in hand.
    public func stopBulk(_ id: Int64, actor: String) async throws(JobStoreError) -> Bool {
        try await database("stop the bulk action") { connection, logger in
            try await connection.query(
                """
                UPDATE admin_operations SET state = 'stopped', finished_at = now(), message = message || ' (stopped by ' || \(actor) || ')'
                WHERE id = \(id) AND state = 'running' RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    public func operation(_ id: Int64) async throws(JobStoreError) -> OperationRecord? {
        try await database("read the operator's action") { connection, logger in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.operationColumns) FROM admin_operations WHERE id = \(id)",
                logger: logger)
            for try await row in rows { return try Self.operation(row) }
            return nil
        }
    }

    /// The audit log, newest first, `limit` before `before` (an id), of one job when given.
    public func operations(before: Int64? = nil, job: UUID? = nil, limit: Int = 50) async throws(JobStoreError) -> [OperationRecord] {
        try await database("read the audit log") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.operationColumns) FROM admin_operations
                WHERE (\(before)::bigint IS NULL OR id < \(before)) AND (\(job)::uuid IS NULL OR job_id = \(job))
                ORDER BY id DESC LIMIT \(min(max(limit, 1), 500))
                """, logger: logger)
            var list: [OperationRecord] = []
            for try await row in rows { list.append(try Self.operation(row)) }
            return list
        }
    }

    static let operationColumns = """
        id, actor, action, job_id, filter::text AS filter, state, matched, done, skipped, failed, message, cutoff, cursor_at, cursor_id,
        runner, created_at, finished_at
        """

    static func operation(_ row: PostgresRow) throws -> OperationRecord {
        let r = row.makeRandomAccess()
        let cursorAt = try r["cursor_at"].decode(Date?.self), cursorID = try r["cursor_id"].decode(UUID?.self)
        return OperationRecord(
            id: try r["id"].decode(Int64.self), actor: try r["actor"].decode(String.self),
            action: OperatorAction(rawValue: try r["action"].decode(String.self)) ?? .retry, jobID: try r["job_id"].decode(UUID?.self),
            filter: try r["filter"].decode(String?.self).flatMap { try? JSONDecoder.operations.decode(JobFilter.self, from: Data($0.utf8)) },
            state: OperationRecord.State(rawValue: try r["state"].decode(String.self)) ?? .failed,
            matched: try r["matched"].decode(Int?.self), done: try r["done"].decode(Int.self), skipped: try r["skipped"].decode(Int.self),
            failed: try r["failed"].decode(Int.self), message: try r["message"].decode(String?.self), cutoff: try r["cutoff"].decode(Date.self),
            cursor: cursorAt.flatMap { at in cursorID.map { JobCursor(createdAt: at, id: $0) } },
            runner: try r["runner"].decode(String?.self), createdAt: try r["created_at"].decode(Date.self),
            finishedAt: try r["finished_at"].decode(Date?.self))
    }
}

extension JSONEncoder {
    /// Filters as stored in `admin_operations.filter`: dates as ISO 8601, keys sorted.
    static var operations: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        encoder.outputFormatting = .sortedKeys
        return encoder
    }
}

extension JSONDecoder {
    static var operations: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 date: \(text)"))
            }
            return date
        }
        return decoder
    }
}
