import Logging

/// The loop both outboxes' senders run (webhooks and pushes): take the due rows, send them all at
/// once, and wait `pollInterval` when none are due, until the task is cancelled. A row a sender
/// took but did not record comes due again when its lease lapses.
enum OutboxSender {
    static func run<Row: Sendable>(
        _ what: String, every pollInterval: Duration, logger: Logger,
        take: @Sendable () async throws -> [Row], send: @escaping @Sendable (Row) async -> Void
    ) async {
        while !Task.isCancelled {
            let due: [Row]
            do { due = try await take() } catch {
                logger.warning("\(what) not read", metadata: ["error": "\(error)"])
                due = []
            }
            await withTaskGroup(of: Void.self) { group in
                for row in due { group.addTask { await send(row) } }
            }
            if due.isEmpty { try? await Task.sleep(for: pollInterval) }
        }
    }
}
