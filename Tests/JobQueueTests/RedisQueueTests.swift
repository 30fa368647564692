import Foundation
import JobQueue
import Jobs
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Synchronization
import Testing

@Suite("Redis queue (real Redis)", .quiet)
struct RedisQueueTests {
    @Test("Many consumers blocking at once: every job is delivered to exactly one of them")
    func spreadOverConsumers() async throws {
        try await TestServices.withQueue { queue in
            let ids = (0..<60).map { _ in UUID() }
            let consumers = (0..<6).map { queue.consumer(named: "c\($0)") }
            // Consumers block first, then the jobs arrive. Each keeps reading until every job has
            // been delivered to someone (or 30 s pass), however late a loaded machine enqueues them.
            let delivered = DeliveryCount()
            let deadline = ContinuousClock.now + .seconds(30)
            let received = try await withThrowingTaskGroup(of: (String, [UUID]).self) { group in
                for consumer in consumers {
                    group.addTask {
                        var got: [UUID] = []
                        while delivered.value.load(ordering: .relaxed) < ids.count, ContinuousClock.now < deadline {
                            guard let delivery = try await consumer.next(block: .milliseconds(700)) else { continue }
                            got.append(delivery.jobID)
                            delivered.value.add(1, ordering: .relaxed)
                            try await queue.acknowledge(delivery)
                        }
                        return (consumer.name, got)
                    }
                }
                try await Task.sleep(for: .milliseconds(200))
                for id in ids { try await queue.enqueue(id) }
                return try await group.reduce(into: [String: [UUID]]()) { $0[$1.0] = $1.1 }
            }
            let all = received.values.flatMap { $0 }
            #expect(all.count == ids.count, "no job delivered twice")
            #expect(Set(all) == Set(ids), "no job lost")
            #expect(received.values.filter { !$0.isEmpty }.count >= 2, "jobs spread over the consumers: \(received.mapValues(\.count))")
            let stats = try await queue.stats()
            #expect(stats.ready == 0 && stats.inFlight == 0)
            consumers.forEach { $0.close() }
        }
    }

    @Test("A delivery is taken over only after its lease lapses, and heartbeats keep it")
    func leaseLapse() async throws {
        try await TestServices.withQueue { queue in
            let id = UUID()
            try await queue.enqueue(id)
            let a = queue.consumer(named: "a"), b = queue.consumer(named: "b")
            // A 1 s lease, with half a second of margin on each side: the suite runs tests in
            // parallel, and a loaded machine wakes sleepers late.
            let delivery = try #require(try await a.next(block: .seconds(1)))
            #expect(try await b.claimLapsed(minIdle: .seconds(1)) == nil, "not before the lease lapses")
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await queue.heartbeat(delivery, consumer: "a"))
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await b.claimLapsed(minIdle: .seconds(1)) == nil, "the heartbeat renewed the lease")
            try await Task.sleep(for: .milliseconds(1100))
            let taken = try #require(try await b.claimLapsed(minIdle: .seconds(1)))
            #expect(taken == delivery)
            #expect(try await !queue.heartbeat(delivery, consumer: "a"), "the old holder's heartbeat is refused")
            #expect(try await queue.stats().inFlight == 1)
            a.close()
            b.close()
        }
    }

    @Test("A retry waits out its delay in the delayed set, then returns to the stream")
    func delayedRetry() async throws {
        try await TestServices.withQueue { queue in
            let id = UUID()
            try await queue.enqueue(id)
            let consumer = queue.consumer(named: "c")
            let delivery = try #require(try await consumer.next(block: .seconds(1)))
            // Long enough that a loaded machine's pauses between the calls below cannot use it up.
            let delay = Duration.seconds(3)
            // Redis dates the delay by its own TIME, the wall clock, while `retry` runs: so the
            // test keeps time by the wall clock too (a virtual machine's clocks may part when it
            // is paused), from no later than that.
            let requested = Date()
            try await queue.retry(delivery, after: delay)
            #expect(try await queue.promoteDue() == 0)
            #expect(try await consumer.next(block: .milliseconds(100)) == nil)
            var stats = try await queue.stats()
            #expect(stats.delayed == 1 && stats.inFlight == 0 && stats.ready == 0)
            #expect(try await queue.contains([id]) == [true], "a delayed job still counts as queued")
            // Promoted once the delay is over, never before (polled: a loaded machine may be late).
            var promoted = 0
            let patience = delay.inSeconds + 10
            while promoted == 0 && Date().timeIntervalSince(requested) < patience {
                try await Task.sleep(for: .milliseconds(100))
                promoted = try await queue.promoteDue()
            }
            #expect(promoted == 1)
            // Counted from before `retry` was sent, however long its round trip took; Redis counts
            // whole milliseconds, which may round a millisecond off.
            #expect(Date().timeIntervalSince(requested) >= delay.inSeconds - 0.001, "promoted early")
            let again = try #require(try await consumer.next(block: .seconds(1)))
            #expect(again.jobID == id && again.entryID != delivery.entryID)
            try await queue.acknowledge(again)
            try await queue.markDead(id)
            stats = try await queue.stats()
            #expect(stats == QueueStats(ready: 0, delayed: 0, inFlight: 0, deadLettered: 1, oldestReadySeconds: 0, consumers: 1))
            consumer.close()
        }
    }

    @Test("Stats report depth, the oldest ready job's age and jobs in flight")
    func stats() async throws {
        try await TestServices.withQueue { queue in
            // The age is Redis's wall clock now less the entry's (in its id): bounded by the
            // wall-clock time the test took, however long a loaded or paused machine made that.
            let began = Date()
            for _ in 0..<3 { try await queue.enqueue(UUID()) }
            try await queue.enqueue(UUID(), delay: .seconds(60))
            try await Task.sleep(for: .milliseconds(300))
            let consumer = queue.consumer(named: "c")
            _ = try #require(try await consumer.next(block: .seconds(1)))
            let stats = try await queue.stats()
            let took = Date().timeIntervalSince(began)
            #expect(stats.ready == 2 && stats.inFlight == 1 && stats.delayed == 1 && stats.consumers == 1)
            #expect(stats.oldestReadySeconds >= 0.25 && stats.oldestReadySeconds <= took + 0.01, "age \(stats.oldestReadySeconds) s of \(took) s")
            consumer.close()
        }
    }

    @Test("When Redis goes away and comes back, commands reconnect with backoff and nothing is lost")
    func reconnect() async throws {
        let server = try PrivateRedis()
        defer { server.stop() }
        let client = RedisClient(configuration: RedisConfiguration(port: server.port), retryFor: .seconds(10), logger: TestServices.logger)
        let queue = RedisQueue(client: client, logger: TestServices.logger)
        try await queue.prepare()
        let first = UUID()
        try await queue.enqueue(first)
        server.restart(after: .milliseconds(800))  // persistence on: the restart keeps the data
        let second = UUID()
        #expect(try await queue.enqueue(second), "the enqueue waited for Redis to return")
        let consumer = queue.consumer(named: "c")
        let got = [try await consumer.next(block: .seconds(1))?.jobID, try await consumer.next(block: .seconds(1))?.jobID]
        #expect(Set(got.compactMap { $0 }) == [first, second])
        consumer.close()
    }

    @Test("A Redis that never comes back ends in a clear `unavailable` error, not a hang")
    func unreachable() async throws {
        let client = RedisClient(configuration: RedisConfiguration(port: 1), retryFor: .milliseconds(300), logger: TestServices.logger)
        let error = await #expect(throws: RedisError.self) { try await client.send(["PING"]) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("127.0.0.1:1") == true)
    }

    @Test(
        "REDIS_URL parsing: password, database, and refusals with the setting's name",
        arguments: [
            ("redis://127.0.0.1:6380/2", "redis://127.0.0.1:6380/2"),
            ("redis://:s3cret@cache.internal:6379", "redis://:***@cache.internal:6379/0"),
            ("redis://default:s3cret@cache.internal:6379/1", "redis://:***@cache.internal:6379/1"),
        ])
    func configuration(url: String, shown: String) throws {
        #expect(try RedisConfiguration(url: url).description == shown)
    }

    @Test("Malformed REDIS_URLs are refused with a sentence", arguments: ["", "http://x", "rediss://x:6379", "redis://host/abc"])
    func badConfiguration(url: String) {
        #expect(throws: RedisError.self) { try RedisConfiguration(url: url) }
    }
}

/// A Redis server of the test's own on a free port, which the test may kill and start again. It runs
/// daemonized with an append-only file synced on every write, so a restart keeps what was written.
final class PrivateRedis: @unchecked Sendable {
    let port: Int
    let directory: URL
    private var pidFile: URL { directory.appendingPathComponent("redis.pid") }

    init() throws {
        port = Int.random(in: 12_000..<16_000)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("moments-redis-\(port)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    func start() throws {
        _ = try Process.launched { launcher in
            launcher.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
            launcher.arguments = [
                "--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory.path, "--save", "", "--appendonly", "yes",
                "--appendfsync", "always", "--daemonize", "yes", "--pidfile", pidFile.path,
                "--logfile", directory.appendingPathComponent("redis.log").path,
            ]
        }
        for _ in 0..<200 where !Loopback.canConnect(port: port) { usleep(20_000) }
    }

    /// Kills the server now (SIGKILL) and starts it again after `delay`, in the background.
    func restart(after delay: Duration) {
        stop()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay.inMilliseconds)) { try? self.start() }
    }

    func stop() {
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        kill(pid, SIGKILL)
        for _ in 0..<200 where Loopback.canConnect(port: port) { usleep(10_000) }
        try? FileManager.default.removeItem(at: pidFile)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// How many deliveries the consumers of a test have had, shared by their tasks.
private final class DeliveryCount: Sendable {
    let value = Atomic(0)
}
