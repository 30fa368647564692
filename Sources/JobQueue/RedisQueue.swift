import Foundation
import Jobs
import Logging
import MomentsModel
import MomentsSupport

/// The Redis keys of one queue.
public struct QueueKeys: Sendable {
    /// Stream of waiting jobs, one entry `job=<uuid>` each; workers read it through `group`.
    public var stream: String
    /// The consumer group: its pending-entries list holds the jobs being worked on, with their idle time as the lease.
    public var group: String
    /// Set of every job id somewhere in Redis (in the stream, being worked on, or delayed): makes enqueue idempotent.
    public var queued: String
    /// Sorted set of jobs waiting out a retry delay, scored by the time (ms) they become ready.
    public var delayed: String
    /// Sorted set of dead-lettered job ids, scored by when (ms) they were given up.
    public var dead: String
    /// `1` while the queue is paused (workers take no new jobs), `0` once resumed; missing when
    /// Redis has no word on it (a new queue, or a Redis that restarted empty).
    public var paused: String

    public init(prefix: String = "moments") {
        stream = "\(prefix):jobs"
        group = "workers"
        queued = "\(prefix):queued"
        delayed = "\(prefix):delayed"
        dead = "\(prefix):dead"
        paused = "\(prefix):paused"
    }

    /// Every key of the queue (not the consumer group, which lives in the stream).
    public var all: [String] { [stream, queued, delayed, dead, paused] }
}

/// A job queue on Redis Streams with one consumer group.
///
/// - Enqueue adds the id to a set and appends a stream entry only if the id was not already there,
///   so enqueueing twice is one job.
/// - Workers block on `XREADGROUP`, which hands each entry to exactly one of the waiting consumers.
/// - A delivered entry stays in the group's pending list until acknowledged; its idle time is the
///   lease. Heartbeats reset it; an entry idle longer than the lease is claimed by another worker.
/// - Retries wait in a sorted set and return to the stream when their time comes.
///
/// Every multi-key change is one Lua script, so it is atomic on the server. PostgreSQL stays the
/// truth: the reconciler puts back what Redis loses.
public final class RedisQueue: JobQueueDriver {
    let client: RedisClient
    public let keys: QueueKeys
    let logger: Logger

    public init(client: RedisClient, keys: QueueKeys = QueueKeys(), logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    /// Creates the stream and its group if missing. The group starts at the beginning of the stream,
    /// so entries added before it existed (say by the reconciler after Redis restarted empty) are delivered.
    public func prepare() async throws(RedisError) {
        do {
            try await client.send(["XGROUP", "CREATE", keys.stream, keys.group, "0", "MKSTREAM"])
        } catch  where error.code == .command && error.message.hasPrefix("BUSYGROUP") {
            // Already there.
        }
    }

    /// Adds the job unless it is already queued; after `delay` it becomes ready (zero: at once).
    /// Returns false if it was already there.
    @discardableResult
    public func enqueue(_ id: UUID, delay: Duration = .zero) async throws(RedisError) -> Bool {
        let added = try await client.eval(
            Scripts.enqueue, keys: [keys.queued, keys.delayed, keys.stream],
            arguments: [id.uuidString.lowercased(), String(delay.inMilliseconds)])
        return added.int == 1
    }

    /// A consumer for one worker slot, with its own connection for blocking reads.
    public func consumer(named name: String) -> QueueConsumer {
        QueueConsumer(queue: self, name: name, connection: client.dedicatedConnection(label: name))
    }

    /// Renews the lease: resets the entry's idle time, if `consumer` still holds it. False when the
    /// entry was claimed by another consumer or is gone (acknowledged, or Redis lost it).
    public func heartbeat(_ delivery: Delivery, consumer: String) async throws(RedisError) -> Bool {
        try await client.eval(Scripts.heartbeat, keys: [keys.stream], arguments: [keys.group, delivery.entryID, consumer]).int == 1
    }

    /// Done with the job for good (completed, failed, cancelled or gone): removes every trace.
    public func acknowledge(_ delivery: Delivery) async throws(RedisError) {
        try await client.eval(
            Scripts.acknowledge, keys: [keys.stream, keys.queued, keys.delayed],
            arguments: [keys.group, delivery.entryID, delivery.jobID.uuidString.lowercased()])
    }

    /// Ends this delivery and makes the job ready again after `delay` (zero: at once, e.g. when a
    /// worker gives its jobs back at shutdown).
    public func retry(_ delivery: Delivery, after delay: Duration) async throws(RedisError) {
        try await client.eval(
            Scripts.retry, keys: [keys.stream, keys.queued, keys.delayed],
            arguments: [keys.group, delivery.entryID, delivery.jobID.uuidString.lowercased(), String(delay.inMilliseconds)])
    }

    /// Moves delayed jobs whose time has come into the stream. Safe to run from every process at once.
    @discardableResult
    public func promoteDue(limit: Int = 100) async throws(RedisError) -> Int {
        try await client.eval(Scripts.promote, keys: [keys.delayed, keys.stream], arguments: [String(limit)]).int ?? 0
    }

    /// Which of `ids` Redis knows (ready, in flight or delayed).
    public func contains(_ ids: [UUID]) async throws(RedisError) -> [Bool] {
        guard !ids.isEmpty else { return [] }
        let reply = try await client.send(["SMISMEMBER", keys.queued] + ids.map { $0.uuidString.lowercased() })
        return (reply.array ?? []).map { $0.int == 1 }
    }

    /// Forgets a job that will never run (cancelled while waiting). Its stream entry, if any, is
    /// acknowledged by the worker that receives it and finds the job cancelled.
    public func remove(_ id: UUID) async throws(RedisError) {
        try await client.eval(Scripts.remove, keys: [keys.queued, keys.delayed], arguments: [id.uuidString.lowercased()])
    }

    /// Records a dead-lettered job (its row in PostgreSQL keeps the details).
    public func markDead(_ id: UUID) async throws(RedisError) {
        try await client.eval(Scripts.markDead, keys: [keys.dead], arguments: [id.uuidString.lowercased()])
    }

    /// Takes a job off the dead-letter list (an operator retries it).
    public func unmarkDead(_ id: UUID) async throws(RedisError) {
        _ = try await client.send(["ZREM", keys.dead, id.uuidString.lowercased()])
    }

    public func stats() async throws(RedisError) -> QueueStats {
        let reply = try await client.eval(Scripts.stats, keys: [keys.stream, keys.delayed, keys.dead, keys.paused], arguments: [keys.group])
        let v = (reply.array ?? []).map { $0.int ?? 0 }
        guard v.count == 7 else { throw RedisError(.command, "Unexpected reply to the queue statistics script.") }
        return QueueStats(
            ready: v[0], delayed: v[2], inFlight: v[1], deadLettered: v[3],
            oldestReadySeconds: v[4] > 0 ? Double(v[5] - v[4]) / 1000 : 0, consumers: try await consumerNames().count,
            paused: v[6] == 1)
    }

    public func setPaused(_ paused: Bool) async throws(RedisError) {
        try await client.send(["SET", keys.paused, paused ? "1" : "0"])
    }

    public func pausedState() async throws(RedisError) -> Bool? {
        switch try await client.send(["GET", keys.paused]).string {
        case "1": true
        case "0": false
        default: nil
        }
    }

    /// Whether Redis answers PING now (one try, no retries).
    public func isReachable() async -> Bool { await client.ping() }

    /// Deletes every key of the queue (benchmarks and tests clean up with it).
    public func destroy() async throws(RedisError) {
        try await client.send(["DEL"] + keys.all)
    }

    /// Removes consumers (worker slots that are gone) that hold nothing and have been idle for
    /// `idleFor`, so the group does not grow with every restart. Returns how many went.
    @discardableResult
    public func pruneConsumers(idleFor: Duration) async throws(RedisError) -> Int {
        try await client.eval(Scripts.pruneConsumers, keys: [keys.stream], arguments: [keys.group, String(idleFor.inMilliseconds)]).int ?? 0
    }

    func consumerNames() async throws(RedisError) -> [String] {
        let reply: RedisValue
        do {
            reply = try await client.send(["XINFO", "CONSUMERS", keys.stream, keys.group])
        } catch  where error.code == .command {
            return []  // no stream or group yet
        }
        return (reply.array ?? []).compactMap { consumer in
            let fields = consumer.array ?? []
            return stride(from: 0, to: fields.count - 1, by: 2).first { fields[$0].string == "name" }.flatMap { fields[$0 + 1].string }
        }
    }
}

/// One worker slot's view of the queue: blocking reads and claims of lapsed leases.
public final class QueueConsumer: JobQueueConsumer {
    public let name: String
    let queue: RedisQueue
    private let connection: RedisConnection

    init(queue: RedisQueue, name: String, connection: RedisConnection) {
        self.queue = queue
        self.name = name
        self.connection = connection
    }

    /// Waits up to `block` for a new job. Recreates the group if Redis lost it.
    public func next(block: Duration) async throws(RedisError) -> Delivery? {
        let keys = queue.keys
        let command = [
            "XREADGROUP", "GROUP", keys.group, name, "COUNT", "1", "BLOCK", String(block.inMilliseconds),
            "STREAMS", keys.stream, ">",
        ]
        let reply: RedisValue
        do {
            reply = try await RedisClient.withReconnect(retryFor: queue.client.retryFor, logger: queue.logger) { () throws(RedisError) in
                try await connection.send(command, timeout: block + .seconds(5))
            }
        } catch  where error.code == .command && error.message.hasPrefix("NOGROUP") {
            queue.logger.notice("consumer group missing (Redis restarted empty?); creating it")
            try await queue.prepare()
            return nil
        }
        // [[stream, [[entry-id, [field, value, …]]]]]
        guard let stream = reply.array?.first?.array, stream.count == 2, let entry = stream[1].array?.first?.array else { return nil }
        return Self.delivery(entry)
    }

    /// Takes over one job whose lease lapsed (its entry idle for at least `minIdle`), if there is one.
    public func claimLapsed(minIdle: Duration) async throws(RedisError) -> Delivery? {
        let keys = queue.keys
        let reply: RedisValue
        do {
            reply = try await queue.client.eval(
                Scripts.claimLapsed, keys: [keys.stream],
                arguments: [keys.group, name, String(minIdle.inMilliseconds)])
        } catch  where error.code == .command && error.message.contains("NOGROUP") {
            return nil
        }
        guard let entry = reply.array, entry.count == 2 else { return nil }
        return Self.delivery(entry)
    }

    /// Closes the blocking connection (used at shutdown).
    public func close() {
        connection.close()
    }

    static func delivery(_ entry: [RedisValue]) -> Delivery? {
        guard entry.count == 2, let id = entry[0].string, let fields = entry[1].array else { return nil }
        let pairs = stride(from: 0, to: fields.count - 1, by: 2).map { (fields[$0].string, fields[$0 + 1].string) }
        guard let value = pairs.first(where: { $0.0 == "job" })?.1, let jobID = UUID(uuidString: value) else { return nil }
        return Delivery(jobID: jobID, entryID: id)
    }
}
