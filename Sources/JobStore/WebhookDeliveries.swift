import Foundation
import PostgresNIO

/// One webhook to send: a job reached a terminal status and has a `callback_url`. The row is
/// written by a trigger in the same statement that ended the job, so no ending goes unannounced.
public struct WebhookDelivery: Sendable, Equatable {
    public var id: Int64
    public var jobID: UUID
    public var url: String
    /// `job.completed`, `job.failed` or `job.cancelled`.
    public var event: String
    /// Attempts so far, this one included.
    public var attempt: Int
}

/// How one attempt went.
public enum WebhookAttemptOutcome: Sendable, Equatable {
    case delivered(status: Int)
    /// Try again at `retryAt`, or give up when it is nil.
    case failed(status: Int?, error: String, retryAt: Date?)
}

extension JobStore {
    /// Takes up to `limit` deliveries that are due and moves their next attempt `lease` ahead, so a
    /// sender that dies mid-request leaves them to be tried again then. Several senders never take
    /// the same row (`SKIP LOCKED`).
    public func takeDueWebhooks(limit: Int, lease: Duration) async throws(JobStoreError) -> [WebhookDelivery] {
        try await database("take due webhooks") { client, logger in
            let rows = try await client.query("""
                WITH due AS (
                    SELECT id FROM webhook_deliveries
                    WHERE delivered_at IS NULL AND gave_up_at IS NULL AND next_attempt_at <= now()
                    ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                UPDATE webhook_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(),
                    next_attempt_at = now() + make_interval(secs => \(lease.inSeconds))
                FROM due WHERE d.id = due.id
                RETURNING d.id, d.job_id, d.url, d.event, d.attempts
                """, logger: logger)
            var deliveries: [WebhookDelivery] = []
            for try await (id, job, url, event, attempt) in rows.decode((Int64, UUID, String, String, Int).self) {
                deliveries.append(WebhookDelivery(id: id, jobID: job, url: url, event: event, attempt: attempt))
            }
            return deliveries
        }
    }

    /// Records how an attempt went.
    public func recordWebhookAttempt(_ delivery: WebhookDelivery, _ outcome: WebhookAttemptOutcome) async throws(JobStoreError) {
        try await database("record the webhook attempt") { client, logger in
            switch outcome {
            case .delivered(let status):
                try await client.query("""
                    UPDATE webhook_deliveries SET delivered_at = now(), last_status = \(status), last_error = NULL
                    WHERE id = \(delivery.id)
                    """, logger: logger)
            case .failed(let status, let error, let retryAt?):
                try await client.query("""
                    UPDATE webhook_deliveries SET next_attempt_at = \(retryAt), last_status = \(status), last_error = \(error)
                    WHERE id = \(delivery.id)
                    """, logger: logger)
            case .failed(let status, let error, nil):
                try await client.query("""
                    UPDATE webhook_deliveries SET gave_up_at = now(), last_status = \(status), last_error = \(error)
                    WHERE id = \(delivery.id)
                    """, logger: logger)
            }
        }
    }

    /// Every delivery of a job's webhooks, oldest first (for tests and `moments jobs show`).
    public func webhookDeliveries(job: UUID) async throws(JobStoreError)
        -> [(event: String, attempts: Int, lastStatus: Int?, lastError: String?, delivered: Bool, gaveUp: Bool)] {
        try await database("read the job's webhooks") { client, logger in
            let rows = try await client.query("""
                SELECT event, attempts, last_status, last_error, delivered_at IS NOT NULL, gave_up_at IS NOT NULL
                FROM webhook_deliveries WHERE job_id = \(job) ORDER BY id
                """, logger: logger)
            var list: [(event: String, attempts: Int, lastStatus: Int?, lastError: String?, delivered: Bool, gaveUp: Bool)] = []
            for try await row in rows.decode((String, Int, Int?, String?, Bool, Bool).self) { list.append(row) }
            return list
        }
    }
}
