import Foundation
import JobQueue
import JobStore
import Logging

/// Makes Redis follow PostgreSQL again: puts back pending jobs Redis does not know (Redis restarted
/// empty, or an enqueue was lost between the INSERT and the push), returns jobs whose lease lapsed
/// to the queue, dead-letters those with no attempts left, and prunes departed consumers.
/// One process at a time runs it (a PostgreSQL advisory lock).
public struct Reconciler: Sendable {
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// Pending jobs that were missing from Redis and were enqueued again.
        public var restoredPending = 0
        /// Jobs whose lease lapsed that were missing from Redis and were enqueued again.
        public var restoredLapsed = 0
        /// Jobs whose lease lapsed on their last attempt, failed with `exhausted_retries`.
        public var exhausted = 0
        public var prunedConsumers = 0

        public var description: String {
            "restored_pending=\(restoredPending) restored_lapsed=\(restoredLapsed) exhausted=\(exhausted) pruned_consumers=\(prunedConsumers)"
        }
    }

    let store: JobStore
    let queue: RedisQueue
    let quiet: Duration
    let logger: Logger

    public init(store: JobStore, queue: RedisQueue, quiet: Duration = .seconds(10), logger: Logger) {
        self.store = store
        self.queue = queue
        self.quiet = quiet
        self.logger = logger
    }

    /// One pass, if no other process is running one. Nil when another process holds the lock.
    public func runOnce() async throws -> Report? {
        let pass = self
        return try await store.exclusively("moments.reconciler") { try await pass.pass() }
    }

    func pass() async throws -> Report {
        var report = Report()
        try await queue.prepare()
        let pending = try await store.pendingJobs(quietFor: quiet)
        let known = try await queue.contains(pending.map(\.id))
        for (job, isKnown) in zip(pending, known) where !isKnown {
            let wait = max(0, job.runAfter.timeIntervalSinceNow)
            if try await queue.enqueue(job.id, delay: .milliseconds(Int(wait * 1000))) { report.restoredPending += 1 }
        }
        let lapsed = try await store.lapsedLeases()
        let lapsedKnown = try await queue.contains(lapsed.map(\.id))
        for (job, isKnown) in zip(lapsed, lapsedKnown) {
            if job.attempt >= job.maxAttempts {
                if try await store.exhaustLapsed(job.id, attempt: job.attempt) {
                    try await queue.remove(job.id)
                    try await queue.markDead(job.id)
                    report.exhausted += 1
                }
            } else if !isKnown, try await queue.enqueue(job.id) {
                report.restoredLapsed += 1
            }
        }
        report.prunedConsumers = try await queue.pruneConsumers(idleFor: .seconds(3600))
        if report != Report() { logger.notice("reconciled", metadata: ["report": "\(report)"]) }
        return report
    }
}
