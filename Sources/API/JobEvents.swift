import Foundation
import Hummingbird
import JobStore
import Logging
import ServiceLifecycle

/// Who is watching which job, fed by PostgreSQL's change notifications. Each watcher gets a stream
/// that says "look again" (changes coalesce: a slow client only ever misses intermediate states).
public actor JobEventsHub {
    enum Signal: Sendable { case changed, keepAlive }

    private var watchers: [UUID: [UUID: AsyncStream<Signal>.Continuation]] = [:]

    public init() {}

    func watch(_ job: UUID) -> (token: UUID, signals: AsyncStream<Signal>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .bufferingNewest(1))
        let token = UUID()
        watchers[job, default: [:]][token] = continuation
        return (token, stream)
    }

    func stopWatching(_ job: UUID, token: UUID) {
        watchers[job]?.removeValue(forKey: token)?.finish()
        if watchers[job]?.isEmpty == true { watchers[job] = nil }
    }

    func changed(_ job: UUID) {
        watchers[job]?.values.forEach { $0.yield(.changed) }
    }

    func keepAlive() {
        watchers.values.forEach { $0.values.forEach { $0.yield(.keepAlive) } }
    }
}

/// Listens for job changes on one PostgreSQL connection and tells the hub; reconnects when the
/// connection drops. Every 15 s each watcher gets a keep-alive, on which it also looks again, so a
/// change missed while reconnecting shows within 15 s.
struct JobEventsListener: Service {
    let store: JobStore
    let hub: JobEventsHub
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(15))
                        await hub.keepAlive()
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do {
                            try await store.listenForChanges { await hub.changed($0) }
                        } catch {
                            if Task.isCancelled { break }
                            logger.warning("job change notifications interrupted; listening again", metadata: ["error": "\(error)"])
                            try? await Task.sleep(for: .seconds(1))
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }
}
