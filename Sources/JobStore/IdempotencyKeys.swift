import Foundation
import PostgresNIO

/// What an `Idempotency-Key` stands for: the request it first came with (its endpoint and
/// fingerprint) and the job id that request was given.
public struct IdempotencyRecord: Sendable, Equatable {
    public var endpoint: String
    public var fingerprint: String
    public var jobID: UUID
    public var createdAt: Date
}

extension JobStore {
    /// How long a key is remembered.
    public static let idempotencyWindow: TimeInterval = 86_400

    /// The live (under a day old) record of `owner`'s `key`, if any.
    public func idempotencyKey(owner: String?, key: String) async throws(JobStoreError) -> IdempotencyRecord? {
        try await database("read the idempotency key") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT endpoint, fingerprint, job_id, created_at FROM idempotency_keys
                WHERE owner = \(owner ?? "") AND key = \(key) AND created_at > now() - make_interval(secs => \(Self.idempotencyWindow))
                """, logger: logger)
            for try await (endpoint, fingerprint, jobID, createdAt) in rows.decode((String, String, UUID, Date).self) {
                return IdempotencyRecord(endpoint: endpoint, fingerprint: fingerprint, jobID: jobID, createdAt: createdAt)
            }
            return nil
        }
    }

    /// Records `key` for this request and `jobID`, unless a live record has it already: then that
    /// record is the answer (the caller compares it with its request). An expired record is replaced.
    public func claimIdempotencyKey(
        owner: String?, key: String, endpoint: String, fingerprint: String,
        jobID: UUID
    ) async throws(JobStoreError) -> IdempotencyRecord {
        let claimed = try await database("record the idempotency key") { connection, logger -> IdempotencyRecord? in
            let rows = try await connection.query(
                """
                INSERT INTO idempotency_keys AS k (owner, key, endpoint, fingerprint, job_id)
                VALUES (\(owner ?? ""), \(key), \(endpoint), \(fingerprint), \(jobID))
                ON CONFLICT (owner, key) DO UPDATE
                    SET endpoint = excluded.endpoint, fingerprint = excluded.fingerprint, job_id = excluded.job_id, created_at = now()
                    WHERE k.created_at <= now() - make_interval(secs => \(Self.idempotencyWindow))
                RETURNING endpoint, fingerprint, job_id, created_at
                """, logger: logger)
            for try await (endpoint, fingerprint, jobID, createdAt) in rows.decode((String, String, UUID, Date).self) {
                return IdempotencyRecord(endpoint: endpoint, fingerprint: fingerprint, jobID: jobID, createdAt: createdAt)
            }
            return nil
        }
        if let claimed { return claimed }
        guard let live = try await idempotencyKey(owner: owner, key: key) else {
            throw JobStoreError(.unavailable, "The idempotency key could not be recorded or read; try again.")
        }
        return live
    }

    /// Deletes keys older than the window; returns how many.
    @discardableResult
    public func deleteExpiredIdempotencyKeys(limit: Int = 10_000) async throws(JobStoreError) -> Int {
        try await database("delete expired idempotency keys") { connection, logger in
            let rows = try await connection.query(
                """
                DELETE FROM idempotency_keys WHERE ctid IN (
                    SELECT ctid FROM idempotency_keys WHERE created_at <= now() - make_interval(secs => \(Self.idempotencyWindow))
                    LIMIT \(limit))
                RETURNING 1
                """, logger: logger)
            var count = 0
            for try await _ in rows { count += 1 }
            return count
        }
    }
}
