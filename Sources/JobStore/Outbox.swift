import Foundation
import PostgresNIO

/// What the two outboxes (`webhook_deliveries`, `push_deliveries`) share: a row is due at
/// `next_attempt_at`, is taken under a lease so a sender that dies mid-request leaves it to be
/// tried again then, and ends delivered or given up; `last_status` and a detail column say how its
/// last attempt went. Several senders never take the same row (`SKIP LOCKED`).
struct Outbox: Sendable {
    /// How an attempt ended, as the table records it.
    enum Ending {
        case delivered
        case retry(at: Date)
        case gaveUp
    }

    /// The table's name and the column of the last attempt's detail: constants, never input.
    let table: String
    let detailColumn: String

    static let webhooks = Outbox(table: "webhook_deliveries", detailColumn: "last_error")
    static let pushes = Outbox(table: "push_deliveries", detailColumn: "last_reason")

    /// Takes up to `limit` due rows, counts the attempt and moves their next one `lease` ahead;
    /// answers `columns` of each (of the row `d`).
    func takeDue(limit: Int, lease: Duration, returning columns: String) -> PostgresQuery {
        """
        WITH due AS (
            SELECT id FROM \(unescaped: table)
            WHERE delivered_at IS NULL AND gave_up_at IS NULL AND next_attempt_at <= now()
            ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
        UPDATE \(unescaped: table) d SET attempts = d.attempts + 1, last_attempt_at = now(),
            next_attempt_at = now() + make_interval(secs => \(lease.inSeconds))
        FROM due WHERE d.id = due.id
        RETURNING \(unescaped: columns)
        """
    }

    /// Records how the attempt on row `id` went.
    func record(_ id: Int64, _ ending: Ending, status: Int?, detail: String?) -> PostgresQuery {
        switch ending {
        case .delivered:
            """
            UPDATE \(unescaped: table) SET delivered_at = now(), last_status = \(status), \(unescaped: detailColumn) = \(detail)
            WHERE id = \(id)
            """
        case .retry(let at):
            """
            UPDATE \(unescaped: table) SET next_attempt_at = \(at), last_status = \(status), \(unescaped: detailColumn) = \(detail)
            WHERE id = \(id)
            """
        case .gaveUp:
            """
            UPDATE \(unescaped: table) SET gave_up_at = now(), last_status = \(status), \(unescaped: detailColumn) = \(detail)
            WHERE id = \(id)
            """
        }
    }
}
