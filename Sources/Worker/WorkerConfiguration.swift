import Foundation
import MomentsModel
import MomentsSupport

/// How a worker takes, holds and gives back jobs. The defaults suit real highlight jobs; tests and
/// the fault demonstration shorten the times.
public struct WorkerConfiguration: Sendable {
    /// Names this process in leases, `job_events` and the consumer group.
    public var name: String
    /// Jobs this process works on at once.
    public var concurrency: Int
    /// How long a lease lasts without a heartbeat: a dead worker's job waits this long before another takes it.
    public var lease: Duration
    /// How often a running job's lease is renewed.
    public var heartbeat: Duration
    /// How often a running job checks whether it was cancelled (the issue asks for at most 2 s).
    public var cancelCheck: Duration
    /// Added to `lease` before a lapsed Redis delivery is taken over, so PostgreSQL's lease (renewed
    /// just after Redis's) has surely lapsed too.
    public var takeoverGrace: Duration
    /// Retry delay after the first failed attempt; doubles with each attempt, with jitter, up to `retryCap`.
    public var retryBase: Duration
    public var retryCap: Duration
    /// How long a blocking read waits before the loop looks around (shutdown, lapsed leases).
    public var pollBlock: Duration
    /// While the queue is paused, how often each slot looks whether it was resumed.
    public var pausedCheck: Duration
    /// How often this process tries to be the reconciler.
    public var reconcileInterval: Duration
    /// A pending job untouched this long and absent from Redis is put back by the reconciler.
    public var reconcileQuiet: Duration
    /// Progress is written at most this often (and at every stage change).
    public var progressInterval: Duration
    /// On shutdown, running jobs get this long to finish before their leases are given back.
    public var shutdownGrace: Duration
    /// An attempt that reports no progress for this long is stopped and fails `attempt_stalled`
    /// (retried like any passing failure).
    public var stallLimit: Duration = .seconds(300)
    /// How often the worker tells the registry (`workers`) it is alive, and what it runs.
    public var registryHeartbeat: Duration = .seconds(5)
    /// No attempt runs longer than this, whatever it expects (`attempt_timeout`).
    public var attemptLimit: Duration = .seconds(7200)
    /// Once the work says how long it expects to take (`JobContext.expect`), its deadline is this
    /// many times that, and at least `deadlineFloor`.
    public var deadlineMultiple: Double = 4
    public var deadlineFloor: Duration = .seconds(120)

    public init(
        name: String = WorkerConfiguration.defaultName(), concurrency: Int = 1, lease: Duration = .seconds(60),
        heartbeat: Duration = .seconds(10), cancelCheck: Duration = .seconds(1), takeoverGrace: Duration = .seconds(5),
        retryBase: Duration = .seconds(5), retryCap: Duration = .seconds(600), pollBlock: Duration = .seconds(2),
        pausedCheck: Duration = .seconds(1), reconcileInterval: Duration = .seconds(15), reconcileQuiet: Duration = .seconds(10),
        progressInterval: Duration = .milliseconds(500), shutdownGrace: Duration = .seconds(25)
    ) {
        self.name = name
        self.concurrency = concurrency
        self.lease = lease
        self.heartbeat = heartbeat
        self.cancelCheck = cancelCheck
        self.takeoverGrace = takeoverGrace
        self.retryBase = retryBase
        self.retryCap = retryCap
        self.pollBlock = pollBlock
        self.pausedCheck = pausedCheck
        self.reconcileInterval = reconcileInterval
        self.reconcileQuiet = reconcileQuiet
        self.progressInterval = progressInterval
        self.shutdownGrace = shutdownGrace
    }

    /// `host-pid-xxxx`: unique per process, readable in `admin_workers`.
    public static func defaultName() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "worker"
        return "\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(4).lowercased())"
    }

    /// Exponential backoff with jitter: base·2^(attempt−1), capped, times a random factor in [0.5, 1).
    public func retryDelay(afterAttempt attempt: Int) -> Duration {
        Backoff.delay(afterAttempt: attempt, first: retryBase, cap: retryCap)
    }
}
