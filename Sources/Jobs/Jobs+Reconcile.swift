import Foundation
import JobStore
import Logging

/// What one reconciliation pass repaired.
public struct ReconcileReport: Sendable, Equatable, CustomStringConvertible {
    /// Pending jobs that were missing from the queue and were queued again.
    public var restoredPending = 0
    /// Jobs whose lease lapsed that were missing from the queue and were queued again.
    public var restoredLapsed = 0
    /// Jobs whose lease lapsed on their last attempt, failed with `exhausted_retries`.
    public var exhausted = 0
    public var prunedConsumers = 0

    public init() {}

    public var description: String {
        "restored_pending=\(restoredPending) restored_lapsed=\(restoredLapsed) exhausted=\(exhausted) pruned_consumers=\(prunedConsumers)"
    }
}

extension Jobs {
    /// Makes the queue follow PostgreSQL again: queues pending jobs it does not know (it restarted
    /// empty, or an enqueue was lost between the insert and the push), returns jobs whose lease
    /// lapsed, dead-letters those with no attempts left, and prunes departed consumers. Jobs
    /// pending for less than `quiet` are left alone (their enqueue may be on its way). One process
    /// at a time runs a pass (a PostgreSQL advisory lock): nil when another holds it.
    /// A job on its last attempt is failed only once its lease lapsed more than `grace` ago (the
    /// workers' takeover grace).
    /// Every pending job and lapsed lease is looked at, `batch` at a time: a backlog larger than a
    /// batch does not hide the jobs behind it.
    public func reconcile(quiet: Duration = .seconds(10), grace: Duration = .seconds(5), batch: Int = 1000) async throws -> ReconcileReport? {
        try await store.exclusively("moments.reconciler") { try await reconcilePass(quiet: quiet, grace: grace, batch: batch) }
    }

    private func reconcilePass(quiet: Duration, grace: Duration, batch: Int) async throws -> ReconcileReport {
        var report = ReconcileReport()
        try await queue.prepare()
        var after: UUID?
        while true {
            let pending = try await store.pendingJobs(quietFor: quiet, after: after, limit: batch)
            let known = try await queue.contains(pending.map(\.id))
            for (job, isKnown) in zip(pending, known) where !isKnown {
                let wait = max(0, min(job.runAfter.timeIntervalSinceNow, 86_400 * 365))
                if try await queue.enqueue(job.id, delay: .milliseconds(Int(wait * 1000))) { report.restoredPending += 1 }
            }
            guard pending.count == batch, let last = pending.last else { break }
            after = last.id
        }
        after = nil
        while true {
            let lapsed = try await store.lapsedLeases(after: after, limit: batch)
            let lapsedKnown = try await queue.contains(lapsed.map(\.id))
            for (job, isKnown) in zip(lapsed, lapsedKnown) {
                if job.attempt >= job.maxAttempts {
                    if try await store.exhaustLapsed(job.id, attempt: job.attempt, grace: grace) {
                        try await queue.remove(job.id)
                        try await queue.markDead(job.id)
                        report.exhausted += 1
                    }
                } else if !isKnown, try await queue.enqueue(job.id) {
                    report.restoredLapsed += 1
                }
            }
            guard lapsed.count == batch, let last = lapsed.last else { break }
            after = last.id
        }
        report.prunedConsumers = try await queue.pruneConsumers(idleFor: .seconds(3600))
        if report != ReconcileReport() { logger.notice("reconciled", metadata: ["report": "\(report)"]) }
        return report
    }
}
