import Foundation
import PostgresNIO

/// Where APNs should send: the sandbox (development builds) or production.
public enum PushEnvironment: String, Sendable, CaseIterable, Codable {
    case sandbox, production
}

/// One push to send: a job of a device with a push token ended.
public struct PushDelivery: Sendable, Equatable {
    public var id: Int64
    public var jobID: UUID
    public var deviceID: UUID
    public var token: String
    public var environment: PushEnvironment
    /// `job.completed` or `job.failed`.
    public var event: String
    /// Attempts so far, this one included.
    public var attempt: Int
}

/// How one push attempt went.
public enum PushAttemptOutcome: Sendable, Equatable {
    case delivered
    /// Try again at `retryAt`, or give up when it is nil; `reason` is APNs' (or ours).
    case failed(status: Int?, reason: String, retryAt: Date?)
}

/// One row of `push_deliveries`, as the console shows it.
public struct PushDeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var event: String
    public var environment: String
    public var attempts: Int
    public var lastStatus: Int?
    public var lastReason: String?
    public var createdAt: Date
    public var deliveredAt: Date?
    public var gaveUpAt: Date?

    /// `delivered`, `given up` or `waiting`.
    public var state: String { deliveredAt != nil ? "delivered" : gaveUpAt != nil ? "given up" : "waiting" }
}

extension JobStore {
    /// Registers (or replaces) the device's APNs token.
    public func setPushToken(device: UUID, token: String, environment: PushEnvironment) async throws(JobStoreError) -> Date {
        let updated = try await database("register the push token") { connection, logger -> Date? in
            let rows = try await connection.query(
                """
                INSERT INTO push_tokens (device_id, token, environment) VALUES (\(device), \(token), \(environment.rawValue))
                ON CONFLICT (device_id) DO UPDATE SET token = EXCLUDED.token, environment = EXCLUDED.environment, updated_at = now()
                RETURNING updated_at
                """, logger: logger)
            for try await at in rows.decode(Date.self) { return at }
            return nil
        }
        guard let updated else { throw JobStoreError(.unavailable, "The push token was not written.") }
        return updated
    }

    /// Forgets the device's token; with `token`, only if it is still that one (APNs said it is
    /// no longer valid, and the app may have registered a new one since). False when there was none.
    @discardableResult
    public func removePushToken(device: UUID, token: String? = nil) async throws(JobStoreError) -> Bool {
        try await database("remove the push token") { connection, logger in
            try await connection.query(
                """
                DELETE FROM push_tokens WHERE device_id = \(device) AND (\(token)::text IS NULL OR token = \(token)) RETURNING 1
                """, logger: logger
            ).hasRows()
        }
    }

    /// The device's token, if it registered one.
    public func pushToken(device: UUID) async throws(JobStoreError) -> (token: String, environment: PushEnvironment)? {
        try await database("read the push token") { connection, logger in
            let rows = try await connection.query("SELECT token, environment FROM push_tokens WHERE device_id = \(device)", logger: logger)
            for try await (token, environment) in rows.decode((String, String).self) {
                return (token, PushEnvironment(rawValue: environment) ?? .production)
            }
            return nil
        }
    }

    /// Takes up to `limit` due pushes and moves their next attempt `lease` ahead (see `Outbox`).
    public func takeDuePushes(limit: Int, lease: Duration) async throws(JobStoreError) -> [PushDelivery] {
        try await database("take due pushes") { connection, logger in
            let rows = try await connection.query(
                Outbox.pushes.takeDue(
                    limit: limit, lease: lease, returning: "d.id, d.job_id, d.device_id, d.token, d.environment, d.event, d.attempts"),
                logger: logger)
            var pushes: [PushDelivery] = []
            for try await (id, job, device, token, environment, event, attempt)
                in rows.decode((Int64, UUID, UUID, String, String, String, Int).self)
            {
                pushes.append(
                    PushDelivery(
                        id: id, jobID: job, deviceID: device, token: token, environment: PushEnvironment(rawValue: environment) ?? .production,
                        event: event, attempt: attempt))
            }
            return pushes
        }
    }

    /// Records how a push attempt went.
    public func recordPushAttempt(_ push: PushDelivery, _ outcome: PushAttemptOutcome) async throws(JobStoreError) {
        let query =
            switch outcome {
            case .delivered: Outbox.pushes.record(push.id, .delivered, status: 200, detail: nil)
            case .failed(let status, let reason, let retryAt?): Outbox.pushes.record(push.id, .retry(at: retryAt), status: status, detail: reason)
            case .failed(let status, let reason, nil): Outbox.pushes.record(push.id, .gaveUp, status: status, detail: reason)
            }
        try await database("record the push attempt") { connection, logger -> Void in try await connection.query(query, logger: logger) }
    }

    /// A job's pushes, oldest first.
    public func pushDeliveries(job: UUID) async throws(JobStoreError) -> [PushDeliveryRecord] {
        try await database("read the job's pushes") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, event, environment, attempts, last_status, last_reason, created_at, delivered_at, gave_up_at
                FROM push_deliveries WHERE job_id = \(job) ORDER BY id
                """, logger: logger)
            var list: [PushDeliveryRecord] = []
            for try await (id, event, environment, attempts, status, reason, created, delivered, gaveUp)
                in rows.decode((Int64, String, String, Int, Int?, String?, Date, Date?, Date?).self)
            {
                list.append(
                    PushDeliveryRecord(
                        id: id, event: event, environment: environment, attempts: attempts, lastStatus: status, lastReason: reason,
                        createdAt: created, deliveredAt: delivered, gaveUpAt: gaveUp))
            }
            return list
        }
    }
}
