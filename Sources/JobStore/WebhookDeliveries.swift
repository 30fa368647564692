import Foundation
import MomentsSupport
import PostgresNIO

/// One webhook to send: a job reached a terminal status and has a `callback_url`. The row is
/// written by a trigger in the same statement that ended the job, so no ending goes unannounced.
public struct WebhookDelivery: Sendable, Equatable {
    public var id: Int64
    /// Nil for a ping of an endpoint.
    public var jobID: UUID?
    /// The operator's endpoint it goes to; nil for the job's own `callback_url`.
    public var endpointID: UUID?
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
    /// Takes up to `limit` deliveries that are due and moves their next attempt `lease` ahead (see `Outbox`).
    public func takeDueWebhooks(limit: Int, lease: Duration) async throws(JobStoreError) -> [WebhookDelivery] {
        try await database("take due webhooks") { connection, logger in
            let rows = try await connection.query(
                Outbox.webhooks.takeDue(limit: limit, lease: lease, returning: "d.id, d.job_id, d.endpoint_id, d.url, d.event, d.attempts"),
                logger: logger)
            var deliveries: [WebhookDelivery] = []
            for try await (id, job, endpoint, url, event, attempt) in rows.decode((Int64, UUID?, UUID?, String, String, Int).self) {
                deliveries.append(WebhookDelivery(id: id, jobID: job, endpointID: endpoint, url: url, event: event, attempt: attempt))
            }
            return deliveries
        }
    }

    /// Records how an attempt went.
    public func recordWebhookAttempt(_ delivery: WebhookDelivery, _ outcome: WebhookAttemptOutcome) async throws(JobStoreError) {
        let query =
            switch outcome {
            case .delivered(let status): Outbox.webhooks.record(delivery.id, .delivered, status: status, detail: nil)
            case .failed(let status, let error, let retryAt?): Outbox.webhooks.record(delivery.id, .retry(at: retryAt), status: status, detail: error)
            case .failed(let status, let error, nil): Outbox.webhooks.record(delivery.id, .gaveUp, status: status, detail: error)
            }
        try await database("record the webhook attempt") { connection, logger -> Void in try await connection.query(query, logger: logger) }
    }

    /// Every delivery of a job's webhooks, oldest first.
    public func webhookDeliveries(job: UUID) async throws(JobStoreError) -> [WebhookDeliveryRecord] {
        try await database("read the job's webhooks") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.deliveryColumns) FROM webhook_deliveries WHERE job_id = \(job) ORDER BY id
                """, logger: logger)
            var list: [WebhookDeliveryRecord] = []
            for try await row in rows.decode(WebhookDeliveryRecord.Row.self) { list.append(WebhookDeliveryRecord(row)) }
            return list
        }
    }

    /// Sends a job's webhook again: a new delivery of the same event to the same URL, due now,
    /// that names the one it repeats (which stays as it was, for the record). Nil when there is no
    /// delivery `id`.
    public func redeliverWebhook(_ id: Int64) async throws(JobStoreError) -> WebhookDeliveryRecord? {
        try await database("redeliver the webhook") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO webhook_deliveries (job_id, url, event, endpoint_id, redelivery_of)
                SELECT job_id, url, event, endpoint_id, id FROM webhook_deliveries WHERE id = \(id) AND job_id IS NOT NULL
                RETURNING \(unescaped: Self.deliveryColumns)
                """, logger: logger)
            for try await row in rows.decode(WebhookDeliveryRecord.Row.self) { return WebhookDeliveryRecord(row) }
            return nil
        }
    }

    static let deliveryColumns = """
        id, job_id, url, event, attempts, last_status, last_error, created_at, last_attempt_at, delivered_at, gave_up_at, redelivery_of
        """
}

/// One row of `webhook_deliveries`, as operators see it.
public struct WebhookDeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var jobID: UUID
    public var url: String
    public var event: String
    public var attempts: Int
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Date
    public var lastAttemptAt: Date?
    public var deliveredAt: Date?
    public var gaveUpAt: Date?
    /// The delivery this one repeats, when an operator asked for it again.
    public var redeliveryOf: Int64?

    public var delivered: Bool { deliveredAt != nil }
    public var gaveUp: Bool { gaveUpAt != nil }
    /// `delivered`, `given up` or `waiting`.
    public var state: String { delivered ? "delivered" : gaveUp ? "given up" : "waiting" }

    typealias Row = (Int64, UUID, String, String, Int, Int?, String?, Date, Date?, Date?, Date?, Int64?)

    init(_ row: Row) {
        (id, jobID, url, event, attempts, lastStatus, lastError, createdAt, lastAttemptAt, deliveredAt, gaveUpAt, redeliveryOf) = row
    }
}
