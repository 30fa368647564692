import Foundation
import Logging
import MomentsModel
import PostgresNIO

/// An app install holding a token. The token itself is never stored, only its SHA-256.
public struct Device: Sendable, Equatable {
    public var id: UUID
    public var name: String?
    public var plan: Plan
    public var createdAt: Date

    /// The owner recorded on the device's jobs.
    public var owner: String { id.uuidString.lowercased() }
}

/// Highlights made in the current calendar month (UTC) and when that month ends.
public struct MonthlyUsage: Sendable, Equatable {
    public var used: Int
    public var periodStart: Date
    public var periodEnd: Date
}

extension JobStore {
    /// Records a new device with the SHA-256 (hex) of its token.
    public func registerDevice(id: UUID = UUID(), tokenSHA256: String, name: String?) async throws(JobStoreError) -> Device {
        let row = try await database("register the device") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO devices (id, token_sha256, name) VALUES (\(id), \(tokenSHA256), \(name))
                RETURNING id, name, plan, created_at
                """, logger: logger)
            for try await row in rows.decode((UUID, String?, String, Date).self) { return Optional(row) }
            return nil
        }
        guard let (id, name, plan, created) = row else { throw JobStoreError(.unavailable, "The device could not be registered.") }
        return Device(id: id, name: name, plan: Plan(rawValue: plan) ?? .free, createdAt: created)
    }

    /// The device holding the token with this SHA-256 (hex), unless it was revoked.
    public func device(tokenSHA256: String) async throws(JobStoreError) -> Device? {
        try await database("look up the device") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, name, plan, created_at FROM devices WHERE token_sha256 = \(tokenSHA256) AND revoked_at IS NULL
                """, logger: logger)
            for try await (id, name, plan, created) in rows.decode((UUID, String?, String, Date).self) {
                return Device(id: id, name: name, plan: Plan(rawValue: plan) ?? .free, createdAt: created)
            }
            return nil
        }
    }

    /// The owner's highlights this calendar month (UTC): every job created since the month began
    /// except failed and cancelled ones.
    public func monthlyUsage(owner: String) async throws(JobStoreError) -> MonthlyUsage {
        try await database("count this month's highlights") { connection, logger in
            try await Self.monthlyUsage(owner: owner, on: connection, logger: logger)
        }
    }

    static func monthlyUsage(owner: String, on connection: PostgresConnection, logger: Logger) async throws -> MonthlyUsage {
        let rows = try await connection.query(
            """
            WITH m AS (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start)
            SELECT (SELECT count(*)::int FROM jobs WHERE owner = \(owner) AND created_at >= m.start
                                                      AND status NOT IN ('failed', 'cancelled')),
                   m.start, m.start + interval '1 month'
            FROM m
            """, logger: logger)
        for try await (used, start, end) in rows.decode((Int, Date, Date).self) {
            return MonthlyUsage(used: used, periodStart: start, periodEnd: end)
        }
        throw JobStoreError(.unavailable, "The usage query returned nothing.")
    }
}
