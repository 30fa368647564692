import Foundation
import Hummingbird
import JobStore
import Logging
import ServiceLifecycle

/// Who is watching which job, fed by PostgreSQL's change notifications. Each watcher gets a stream
/// that says "look again" (changes coalesce: a slow client only ever misses intermediate states).
///
/// Open streams are bounded: at most `perOwner` for one owner and `total` in all, so a client
/// opening thousands of connections takes a few kilobytes each up to a fixed ceiling, not the node.
public actor JobEventsHub {
    enum Signal: Sendable { case changed, keepAlive }

    private var watchers: [UUID: [UUID: AsyncStream<Signal>.Continuation]] = [:]
    private var owners: [UUID: String] = [:]
    private var perOwnerCount: [String: Int] = [:]
    let perOwner: Int
    let total: Int

    public init(perOwner: Int = 10, total: Int = 5000) {
        self.perOwner = perOwner
        self.total = total
    }

    /// A stream of signals for `job`, or nil when `owner` has `perOwner` streams open already, or
    /// the node `total`.
    func watch(_ job: UUID, owner: String) -> (token: UUID, signals: AsyncStream<Signal>)? {
        guard perOwnerCount[owner, default: 0] < perOwner, owners.count < total else { return nil }
        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .bufferingNewest(1))
        let token = UUID()
        watchers[job, default: [:]][token] = continuation
        owners[token] = owner
        perOwnerCount[owner, default: 0] += 1
        return (token, stream)
    }

    func stopWatching(_ job: UUID, token: UUID) {
        watchers[job]?.removeValue(forKey: token)?.finish()
        if watchers[job]?.isEmpty == true { watchers[job] = nil }
        if let owner = owners.removeValue(forKey: token) {
            perOwnerCount[owner, default: 1] -= 1
            if perOwnerCount[owner] == 0 { perOwnerCount[owner] = nil }
        }
    }

    /// Streams open now (for tests and metrics).
    var openStreams: Int { owners.count }

    func changed(_ job: UUID) {
        watchers[job]?.values.forEach { $0.yield(.changed) }
        everything.values.forEach { $0.yield(job) }
    }

    // MARK: Every job (the console)

    private var everything: [UUID: AsyncStream<UUID>.Continuation] = [:]
    /// Console streams open at once on this node, at most.
    static let everythingLimit = 100

    /// The id of every job that changes, from now on (the newest 256 kept for a slow reader);
    /// nil when `everythingLimit` streams are open.
    func watchEverything() -> (token: UUID, changes: AsyncStream<UUID>)? {
        guard everything.count < Self.everythingLimit else { return nil }
        let (stream, continuation) = AsyncStream.makeStream(of: UUID.self, bufferingPolicy: .bufferingNewest(256))
        let token = UUID()
        everything[token] = continuation
        return (token, stream)
    }

    func stopWatchingEverything(_ token: UUID) {
        everything.removeValue(forKey: token)?.finish()
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
