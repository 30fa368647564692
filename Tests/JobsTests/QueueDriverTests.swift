import Foundation
import JobQueue
import Jobs
import ServiceTestSupport
import Testing

/// The rules every queue driver keeps, held against the in-memory driver and the Redis one alike,
/// so tests that use the in-memory driver stand for production.
@Suite("Queue drivers: in memory and Redis keep the same rules", .quiet)
struct QueueDriverTests {
    enum Driver: String, CaseIterable, CustomTestStringConvertible {
        case memory, redis
        var testDescription: String { rawValue }
    }

    static func with(_ driver: Driver, _ body: @Sendable (any JobQueueDriver) async throws -> Void) async throws {
        switch driver {
        case .memory: try await body(MemoryQueue())
        case .redis: try await TestServices.withQueue { try await body($0) }
        }
    }

    @Test("Enqueueing twice is one job; contains knows it", arguments: Driver.allCases)
    func idempotent(_ driver: Driver) async throws {
        try await Self.with(driver) { queue in
            let id = UUID()
            #expect(try await queue.enqueue(id))
            #expect(try await !queue.enqueue(id))
            #expect(try await !queue.enqueue(id, delay: .seconds(5)))
            let stats = try await queue.stats()
            #expect(stats.ready == 1 && stats.delayed == 0 && stats.inFlight == 0 && !stats.paused)
            #expect(try await queue.contains([id, UUID()]) == [true, false])
        }
    }

    @Test(
        "A delivery is leased to its consumer: acknowledged it is gone, handed back with a delay it returns when due",
        arguments: Driver.allCases)
    func leaseAndRetry(_ driver: Driver) async throws {
        try await Self.with(driver) { queue in
            let id = UUID()
            try await queue.enqueue(id)
            let consumer = queue.consumer(named: "c")
            defer { consumer.close() }
            let delivery = try #require(try await consumer.next(block: .seconds(1)))
            #expect(delivery.jobID == id)
            #expect(try await queue.heartbeat(delivery, consumer: "c"))
            #expect(try await !queue.heartbeat(delivery, consumer: "someone else"))
            #expect(try await queue.stats().inFlight == 1)
            try await queue.retry(delivery, after: .milliseconds(300))
            #expect(try await consumer.next(block: .milliseconds(100)) == nil, "not before its delay")
            #expect(try await queue.contains([id]) == [true], "a delayed job is still queued")
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await queue.promoteDue() == 1)
            let again = try #require(try await consumer.next(block: .seconds(1)))
            #expect(again.jobID == id && again.entryID != delivery.entryID)
            try await queue.acknowledge(again)
            #expect(try await queue.contains([id]) == [false])
            let stats = try await queue.stats()
            #expect(stats.ready == 0 && stats.delayed == 0 && stats.inFlight == 0)
        }
    }

    @Test("A lapsed lease is claimed by another consumer, a renewed one is not", arguments: Driver.allCases)
    func lapse(_ driver: Driver) async throws {
        try await Self.with(driver) { queue in
            try await queue.enqueue(UUID())
            let a = queue.consumer(named: "a"), b = queue.consumer(named: "b")
            defer { a.close(); b.close() }
            let delivery = try #require(try await a.next(block: .seconds(1)))
            #expect(try await b.claimLapsed(minIdle: .seconds(1)) == nil)
            try await Task.sleep(for: .milliseconds(1200))
            let taken = try #require(try await b.claimLapsed(minIdle: .seconds(1)))
            #expect(taken == delivery)
            #expect(try await !queue.heartbeat(delivery, consumer: "a"), "the old holder lost it")
        }
    }

    @Test("Removed, dead-lettered, paused: what the stats and contains say", arguments: Driver.allCases)
    func bookkeeping(_ driver: Driver) async throws {
        try await Self.with(driver) { queue in
            let kept = UUID(), removed = UUID(), dead = UUID()
            for id in [kept, removed] { try await queue.enqueue(id) }
            try await queue.remove(removed)
            #expect(try await queue.contains([kept, removed]) == [true, false])
            try await queue.markDead(dead)
            #expect(try await queue.stats().deadLettered == 1)
            try await queue.unmarkDead(dead)
            #expect(try await queue.stats().deadLettered == 0)
            #expect(try await queue.pausedState() == nil, "a new queue has no word on it")
            try await queue.setPaused(true)
            #expect(try await queue.pausedState() == true)
            #expect(try await queue.stats().paused)
            try await queue.setPaused(false)
            #expect(try await queue.pausedState() == false)
            #expect(try await !queue.stats().paused)
            #expect(await queue.isReachable())
        }
    }
}
