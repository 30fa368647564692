import Foundation
import MomentsModel
import PostgresNIO

/// What erasing writes: a job's row marked and its personal fields cleared, a device revoked for
/// good. The objects go between the mark and `markObjectsExpired` (`Jobs.erase`), so an erasure
/// that storage cut short is finished by asking again, or by the retention sweep.
extension JobStore {
    /// Marks an ended job erased (the first time only) and clears what the app or the video said
    /// about it: the file name, the metadata, the segments and what the source was. Nil when there
    /// is no such job or it has not ended (cancel it first).
    public func markErased(_ id: UUID) async throws(JobStoreError) -> JobRecord? {
        try await database("mark the job erased") { connection, logger in
            let rows = try await connection.query(
                """
                UPDATE jobs SET erased_at = coalesce(erased_at, now()), original_filename = NULL, metadata = NULL,
                    segments = NULL, source_media = NULL, message = 'Erased at its owner''s request', updated_at = now()
                WHERE id = \(id) AND status IN ('completed', 'failed', 'cancelled')
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            for try await row in rows { return try Self.record(row) }
            return nil
        }
    }

    /// The jobs of `owner` that are not yet wholly erased (not marked, or with objects left).
    public func jobsToErase(owner: String) async throws(JobStoreError) -> [UUID] {
        try await database("find the device's jobs") { connection, logger in
            let rows = try await connection.query(
                "SELECT id FROM jobs WHERE owner = \(owner) AND (erased_at IS NULL OR result_expired_at IS NULL) ORDER BY created_at",
                logger: logger)
            var ids: [UUID] = []
            for try await id in rows.decode(UUID.self) { ids.append(id) }
            return ids
        }
    }

    /// Revokes the device's token and clears its name, recording when it erased itself (the first
    /// time). Answers that time; nil when there is no such device.
    public func markDeviceErased(_ id: UUID) async throws(JobStoreError) -> Date? {
        try await database("erase the device") { connection, logger in
            let rows = try await connection.query(
                """
                UPDATE devices SET revoked_at = coalesce(revoked_at, now()), erased_at = coalesce(erased_at, now()), name = NULL
                WHERE id = \(id) RETURNING erased_at
                """, logger: logger)
            for try await erased in rows.decode(Date.self) { return erased }
            return nil
        }
    }

    /// The device holding the token with this SHA-256 (hex) that erased itself: the one request it
    /// may still make is that erasure again. Nil for any other token.
    public func erasedDevice(tokenSHA256: String) async throws(JobStoreError) -> Device? {
        try await database("look up the device") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT id, name, plan, created_at FROM devices WHERE token_sha256 = \(tokenSHA256) AND erased_at IS NOT NULL
                """, logger: logger)
            for try await (id, name, plan, created) in rows.decode((UUID, String?, String, Date).self) {
                return Device(id: id, name: name, plan: Plan(rawValue: plan) ?? .free, createdAt: created)
            }
            return nil
        }
    }
}
