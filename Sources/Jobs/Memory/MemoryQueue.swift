import Foundation
import MomentsModel
import MomentsSupport

/// A `JobQueueDriver` in memory, for fast tests of the service, the API and the worker. It keeps
/// the Redis queue's rules: enqueueing twice is one job, a delivery stays leased until acknowledged
/// or handed back, a lapsed lease can be claimed by another consumer, a removed job's ready entry
/// is still delivered (the worker finds the job cancelled and acknowledges it).
public actor MemoryQueue: JobQueueDriver {
    private struct Entry {
        var id: String
        var job: UUID
        var readySince: ContinuousClock.Instant
    }

    private struct Lease {
        var job: UUID
        var consumer: String
        var touched: ContinuousClock.Instant
    }

    private var ready: [Entry] = []
    private var queued: Set<UUID> = []
    private var delayed: [UUID: ContinuousClock.Instant] = [:]
    private var leases: [String: Lease] = [:]
    private var dead: Set<UUID> = []
    private var consumers: [String: ContinuousClock.Instant] = [:]
    private var paused: Bool?
    private var entries = 0
    /// While false, every call fails as a server that went away would (`isReachable` answers false).
    private var reachable = true

    public init() {}

    /// Makes the queue unreachable (or reachable again), to test what depends on it.
    public func setReachable(_ reachable: Bool) { self.reachable = reachable }

    public func prepare() throws { try check() }

    public func enqueue(_ id: UUID, delay: Duration) throws -> Bool {
        try check()
        guard queued.insert(id).inserted else { return false }
        if delay > .zero { delayed[id] = .now + delay } else { append(id) }
        return true
    }

    public nonisolated func consumer(named name: String) -> MemoryQueueConsumer {
        MemoryQueueConsumer(queue: self, name: name)
    }

    public func heartbeat(_ delivery: Delivery, consumer: String) throws -> Bool {
        try check()
        guard var lease = leases[delivery.entryID], lease.consumer == consumer else { return false }
        lease.touched = .now
        leases[delivery.entryID] = lease
        return true
    }

    public func acknowledge(_ delivery: Delivery) throws {
        try check()
        leases[delivery.entryID] = nil
        ready.removeAll { $0.id == delivery.entryID }
        queued.remove(delivery.jobID)
        delayed[delivery.jobID] = nil
    }

    public func retry(_ delivery: Delivery, after delay: Duration) throws {
        try check()
        leases[delivery.entryID] = nil
        ready.removeAll { $0.id == delivery.entryID }
        queued.insert(delivery.jobID)
        if delay > .zero {
            delayed[delivery.jobID] = .now + delay
        } else {
            delayed[delivery.jobID] = nil
            append(delivery.jobID)
        }
    }

    public func promoteDue(limit: Int) throws -> Int {
        try check()
        let now = ContinuousClock.now
        let due = delayed.filter { $0.value <= now }.sorted { $0.value < $1.value }.prefix(limit).map(\.key)
        for id in due {
            delayed[id] = nil
            append(id)
        }
        return due.count
    }

    public func contains(_ ids: [UUID]) throws -> [Bool] {
        try check()
        return ids.map(queued.contains)
    }

    public func remove(_ id: UUID) throws {
        try check()
        queued.remove(id)
        delayed[id] = nil
    }

    public func markDead(_ id: UUID) throws {
        try check()
        dead.insert(id)
    }

    public func unmarkDead(_ id: UUID) throws {
        try check()
        dead.remove(id)
    }

    public func stats() throws -> QueueStats {
        try check()
        let oldest = ready.first.map { (ContinuousClock.now - $0.readySince).inSeconds } ?? 0
        return QueueStats(
            ready: ready.count, delayed: delayed.count, inFlight: leases.count, deadLettered: dead.count,
            oldestReadySeconds: oldest, consumers: consumers.count, paused: paused == true)
    }

    public func pruneConsumers(idleFor: Duration) throws -> Int {
        try check()
        let holding = Set(leases.values.map(\.consumer))
        let gone = consumers.filter { !holding.contains($0.key) && ContinuousClock.now - $0.value >= idleFor }.map(\.key)
        for name in gone { consumers[name] = nil }
        return gone.count
    }

    public func setPaused(_ paused: Bool) throws {
        try check()
        self.paused = paused
    }

    public func pausedState() throws -> Bool? {
        try check()
        return paused
    }

    public func isReachable() -> Bool { reachable }

    // MARK: Consumers

    func take(for consumer: String) throws -> Delivery? {
        try check()
        consumers[consumer] = .now
        guard !ready.isEmpty else { return nil }
        let entry = ready.removeFirst()
        leases[entry.id] = Lease(job: entry.job, consumer: consumer, touched: .now)
        return Delivery(jobID: entry.job, entryID: entry.id)
    }

    func claimLapsed(for consumer: String, minIdle: Duration) throws -> Delivery? {
        try check()
        consumers[consumer] = .now
        let now = ContinuousClock.now
        guard let (entryID, lease) = leases.filter({ now - $0.value.touched >= minIdle }).min(by: { $0.value.touched < $1.value.touched })
        else { return nil }
        leases[entryID] = Lease(job: lease.job, consumer: consumer, touched: now)
        return Delivery(jobID: lease.job, entryID: entryID)
    }

    private func append(_ id: UUID) {
        entries += 1
        ready.append(Entry(id: "\(entries)-0", job: id, readySince: .now))
    }

    private func check() throws {
        guard reachable else { throw MemoryDriverError.unreachable }
    }
}

/// One worker slot of a `MemoryQueue`.
public struct MemoryQueueConsumer: JobQueueConsumer {
    let queue: MemoryQueue
    public let name: String

    public func next(block: Duration) async throws -> Delivery? {
        let deadline = ContinuousClock.now + block
        while true {
            if let delivery = try await queue.take(for: name) { return delivery }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    public func claimLapsed(minIdle: Duration) async throws -> Delivery? {
        try await queue.claimLapsed(for: name, minIdle: minIdle)
    }

    public func close() {}
}

/// What an in-memory driver throws while told to be unreachable.
public enum MemoryDriverError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreachable

    public var description: String { "the in-memory store is set to be unreachable" }
}
