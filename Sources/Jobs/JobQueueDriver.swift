import Foundation

/// Where waiting jobs are held and handed to workers (Redis Streams in production, `MemoryQueue`
/// in tests). Shaped after swift-jobs' `JobQueueDriver`: the `Jobs` service above it owns every job
/// operation, and PostgreSQL stays the truth (the reconciler puts back what a driver loses).
///
/// A delivery stays leased to its consumer until acknowledged; its lease is renewed by
/// `heartbeat` and, once lapsed, another consumer may `claimLapsed` it.
public protocol JobQueueDriver: Sendable {
    associatedtype Consumer: JobQueueConsumer

    /// Creates what the driver needs (idempotent).
    func prepare() async throws
    /// Adds the job unless it is already queued; after `delay` it becomes ready. False if it was there.
    @discardableResult
    func enqueue(_ id: UUID, delay: Duration) async throws -> Bool
    /// A consumer for one worker slot.
    func consumer(named name: String) -> Consumer
    /// Renews the lease if `consumer` still holds the delivery; false when it does not.
    func heartbeat(_ delivery: Delivery, consumer: String) async throws -> Bool
    /// Done with the job for good: removes every trace of it.
    func acknowledge(_ delivery: Delivery) async throws
    /// Hands the delivery back, to be ready again after `delay`.
    func retry(_ delivery: Delivery, after delay: Duration) async throws
    /// Moves jobs whose retry delay has passed back to ready; answers how many.
    @discardableResult
    func promoteDue(limit: Int) async throws -> Int
    /// For each id, whether the queue holds it anywhere (ready, delayed or leased).
    func contains(_ ids: [UUID]) async throws -> [Bool]
    /// Removes the job wherever it waits (a cancelled job).
    func remove(_ id: UUID) async throws
    /// Records the job as dead-lettered (given up after its last attempt).
    func markDead(_ id: UUID) async throws
    /// Takes the job off the dead-letter list (an operator retries it).
    func unmarkDead(_ id: UUID) async throws
    func stats() async throws -> QueueStats
    /// Forgets consumers that hold nothing and were idle for `idleFor`; answers how many.
    @discardableResult
    func pruneConsumers(idleFor: Duration) async throws -> Int
    /// Paused: workers take no new jobs (running ones go on; enqueueing still works).
    func setPaused(_ paused: Bool) async throws
    /// Whether the queue is paused, or nil when the queue's server has no word on it (a new queue,
    /// or one that restarted empty): then PostgreSQL, which keeps the truth, says.
    func pausedState() async throws -> Bool?
    /// Whether the queue's server answers now (readiness checks).
    func isReachable() async -> Bool
}

extension JobQueueDriver {
    @discardableResult
    public func enqueue(_ id: UUID) async throws -> Bool { try await enqueue(id, delay: .zero) }
    @discardableResult
    public func promoteDue() async throws -> Int { try await promoteDue(limit: 100) }
}

/// One worker slot's view of the queue.
public protocol JobQueueConsumer: Sendable {
    var name: String { get }
    /// Waits up to `block` for a ready job.
    func next(block: Duration) async throws -> Delivery?
    /// Takes over one delivery whose lease lapsed (idle at least `minIdle`), if there is one.
    func claimLapsed(minIdle: Duration) async throws -> Delivery?
    /// Lets go of the consumer's resources (at shutdown).
    func close()
}

/// A job handed to a consumer: the job and the queue entry that carried it.
public struct Delivery: Sendable, Equatable, CustomStringConvertible {
    public var jobID: UUID
    public var entryID: String

    public init(jobID: UUID, entryID: String) {
        self.jobID = jobID
        self.entryID = entryID
    }

    public var description: String { "\(jobID) (entry \(entryID))" }
}

/// What the queue holds now, for metrics, autoscaling and the operator.
public struct QueueStats: Sendable, Equatable, Codable {
    /// Jobs ready to start and not yet handed to a worker.
    public var ready: Int
    /// Jobs waiting out a retry delay.
    public var delayed: Int
    /// Jobs handed to a worker and not yet acknowledged.
    public var inFlight: Int
    /// Jobs given up after their last attempt.
    public var deadLettered: Int
    /// How long the oldest ready job has waited, in seconds (0 when none waits).
    public var oldestReadySeconds: Double
    public var consumers: Int
    /// Workers take no new jobs while the queue is paused.
    public var paused: Bool

    public init(
        ready: Int, delayed: Int, inFlight: Int, deadLettered: Int, oldestReadySeconds: Double, consumers: Int,
        paused: Bool = false
    ) {
        self.ready = ready
        self.delayed = delayed
        self.inFlight = inFlight
        self.deadLettered = deadLettered
        self.oldestReadySeconds = oldestReadySeconds
        self.consumers = consumers
        self.paused = paused
    }

    enum CodingKeys: String, CodingKey {
        case ready, delayed, consumers, paused
        case inFlight = "in_flight"
        case deadLettered = "dead_lettered"
        case oldestReadySeconds = "oldest_ready_seconds"
    }
}
