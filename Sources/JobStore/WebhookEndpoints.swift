import Foundation
import MomentsSupport
import PostgresNIO

/// An operator's webhook endpoint: every job's end is POSTed there, signed with its own secret.
public struct WebhookEndpoint: Sendable, Equatable {
    public var id: UUID
    public var url: String
    public var secret: String
    /// The secret before the last rotation, still signed with until `previousSecretUntil`.
    public var previousSecret: String?
    public var previousSecretUntil: Date?
    public var description: String?
    public var createdAt: Date
    public var rotatedAt: Date?
    public var removedAt: Date?

    /// The secret as lists show it: its last four digits only.
    public var maskedSecret: String { "whsec_…" + secret.suffix(4) }

    /// The secrets a delivery made at `now` is signed with: the current one, and the one before
    /// while the rotation's overlap lasts.
    public func signingSecrets(at now: Date = Date()) -> [String] {
        guard let previousSecret, let until = previousSecretUntil, until > now else { return [secret] }
        return [secret, previousSecret]
    }

    /// `whsec_` and 64 hex digits (256 random bits).
    public static func newSecret() -> String {
        "whsec_" + Hex.random(bytes: 32)
    }

    typealias Row = (UUID, String, String, String?, Date?, String?, Date, Date?, Date?)

    init(_ row: Row) {
        (id, url, secret, previousSecret, previousSecretUntil, description, createdAt, rotatedAt, removedAt) = row
    }
}

/// How a delivery went, as a ping waits for it.
public struct WebhookDeliveryState: Sendable, Equatable {
    public var attempts: Int
    public var lastStatus: Int?
    public var lastError: String?
    public var delivered: Bool
    public var gaveUp: Bool

    /// Whether an attempt was made and its outcome recorded.
    public var answered: Bool { attempts > 0 && (lastStatus != nil || lastError != nil) }
    /// The last attempt's outcome in words: the error, or the receiver's status.
    public var outcome: String { lastError ?? "HTTP \(lastStatus.map(String.init) ?? "?")" }
}

extension JobStore {
    static let endpointColumns =
        "id, url, secret, previous_secret, previous_secret_until, description, created_at, rotated_at, removed_at"

    /// Registers an endpoint with a new secret.
    public func addWebhookEndpoint(url: String, description: String?) async throws(JobStoreError) -> WebhookEndpoint {
        let endpoint = try await database("add the webhook endpoint") { connection, logger -> WebhookEndpoint? in
            let rows = try await connection.query(
                """
                INSERT INTO webhook_endpoints (id, url, secret, description) VALUES (\(UUID()), \(url), \(WebhookEndpoint.newSecret()), \(description))
                RETURNING \(unescaped: Self.endpointColumns)
                """, logger: logger)
            for try await row in rows.decode(WebhookEndpoint.Row.self) { return WebhookEndpoint(row) }
            return nil
        }
        guard let endpoint else { throw JobStoreError(.unavailable, "The webhook endpoint was not written.") }
        return endpoint
    }

    /// The endpoints, oldest first; removed ones too when asked.
    public func webhookEndpoints(includingRemoved: Bool = false) async throws(JobStoreError) -> [WebhookEndpoint] {
        try await database("read the webhook endpoints") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.endpointColumns) FROM webhook_endpoints
                WHERE \(includingRemoved) OR removed_at IS NULL ORDER BY created_at, id
                """, logger: logger)
            var endpoints: [WebhookEndpoint] = []
            for try await row in rows.decode(WebhookEndpoint.Row.self) { endpoints.append(WebhookEndpoint(row)) }
            return endpoints
        }
    }

    /// One endpoint, removed or not; nil when there is no such endpoint.
    public func webhookEndpoint(_ id: UUID) async throws(JobStoreError) -> WebhookEndpoint? {
        try await database("read the webhook endpoint") { connection, logger in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.endpointColumns) FROM webhook_endpoints WHERE id = \(id)", logger: logger)
            for try await row in rows.decode(WebhookEndpoint.Row.self) { return WebhookEndpoint(row) }
            return nil
        }
    }

    /// Stops sending to the endpoint (its deliveries not yet made are given up by the sender).
    /// False when there is no such endpoint or it was removed already.
    public func removeWebhookEndpoint(_ id: UUID) async throws(JobStoreError) -> Bool {
        try await database("remove the webhook endpoint") { connection, logger in
            try await connection.query(
                "UPDATE webhook_endpoints SET removed_at = now() WHERE id = \(id) AND removed_at IS NULL RETURNING 1", logger: logger
            ).hasRows()
        }
    }

    /// Gives the endpoint a new secret; deliveries are signed with the old one too for `overlap`.
    /// Nil when there is no such endpoint or it was removed.
    public func rotateWebhookEndpoint(_ id: UUID, overlap: Duration) async throws(JobStoreError) -> WebhookEndpoint? {
        try await database("rotate the webhook endpoint's secret") { connection, logger in
            let rows = try await connection.query(
                """
                UPDATE webhook_endpoints SET previous_secret = secret, secret = \(WebhookEndpoint.newSecret()),
                    previous_secret_until = now() + make_interval(secs => \(overlap.inSeconds)), rotated_at = now()
                WHERE id = \(id) AND removed_at IS NULL
                RETURNING \(unescaped: Self.endpointColumns)
                """, logger: logger)
            for try await row in rows.decode(WebhookEndpoint.Row.self) { return WebhookEndpoint(row) }
            return nil
        }
    }

    /// How delivery `id` went, once a worker made an attempt, waiting up to `within` for it; nil
    /// when no attempt was recorded by then (no worker running, say).
    public func webhookAnswer(of id: Int64, within: Duration) async throws -> WebhookDeliveryState? {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if let state = try await webhookDeliveryState(id), state.answered { return state }
            try await Task.sleep(for: .milliseconds(200))
        }
        return nil
    }

    /// A `ping` delivery to the endpoint, due now; its id, or nil when there is no such endpoint
    /// or it was removed.
    public func pingWebhookEndpoint(_ id: UUID) async throws(JobStoreError) -> Int64? {
        try await database("ping the webhook endpoint") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO webhook_deliveries (url, event, endpoint_id)
                SELECT url, 'ping', id FROM webhook_endpoints WHERE id = \(id) AND removed_at IS NULL
                RETURNING id
                """, logger: logger)
            for try await delivery in rows.decode(Int64.self) { return delivery }
            return nil
        }
    }

    /// How delivery `id` has gone so far; nil when there is none.
    public func webhookDeliveryState(_ id: Int64) async throws(JobStoreError) -> WebhookDeliveryState? {
        try await database("read the webhook delivery") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT attempts, last_status, last_error, delivered_at IS NOT NULL, gave_up_at IS NOT NULL
                FROM webhook_deliveries WHERE id = \(id)
                """, logger: logger)
            for try await (attempts, status, error, delivered, gaveUp) in rows.decode((Int, Int?, String?, Bool, Bool).self) {
                return WebhookDeliveryState(attempts: attempts, lastStatus: status, lastError: error, delivered: delivered, gaveUp: gaveUp)
            }
            return nil
        }
    }
}
