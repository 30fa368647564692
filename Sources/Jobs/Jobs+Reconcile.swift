import Foundation
import JobStore
import Logging
import MomentsSupport

/// What one reconciliation pass repaired.
public struct ReconcileReport: Sendable, Equatable, CustomStringConvertible {
    /// Pending jobs that were missing from the queue and were queued again.
    public var restoredPending = 0
    /// Jobs whose lease lapsed that were missing from the queue and were queued again.
    public var restoredLapsed = 0
    /// Jobs whose lease lapsed on their last attempt, failed with `exhausted_retries`.
    public var exhausted = 0
    public var prunedConsumers = 0
    /// The queue had lost whether it is paused (or had it wrong), and got PostgreSQL's word back.
    public var restoredPause = false

    public init() {}

    public var description: String {
        "restored_pending=\(restoredPending) restored_lapsed=\(restoredLapsed) exhausted=\(exhausted) pruned_consumers=\(prunedConsumers)"
            + (restoredPause ? " restored_pause" : "")
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
        // The pause first: a queue that lost it (and the jobs restored below) must not run meanwhile.
        let paused = try await store.isQueuePaused()
        if try await queue.pausedState() != paused {
            try await queue.setPaused(paused)
            report.restoredPause = true
        }
        try await Self.everyPage(batch, id: \.id, { try await store.pendingJobs(quietFor: quiet, after: $0, limit: batch) }) { pending in
            let known = try await queue.contains(pending.map(\.id))
            for (job, isKnown) in zip(pending, known) where !isKnown {
                let wait = max(0, min(job.runAfter.timeIntervalSinceNow, 86_400 * 365))
                if try await queue.enqueue(job.id, delay: .milliseconds(Int(saturating: wait * 1000))) { report.restoredPending += 1 }
            }
        }
        try await Self.everyPage(batch, id: \.id, { try await store.lapsedLeases(after: $0, limit: batch) }) { lapsed in
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
        }
        report.prunedConsumers = try await queue.pruneConsumers(idleFor: .seconds(3600))
        if report != ReconcileReport() { logger.notice("reconciled", metadata: ["report": "\(report)"]) }
        return report
    }

    /// Hands `body` each page `fetch` returns (keyset by id: `fetch` gets the last id of the page
    /// before), until a page comes back short.
    private static func everyPage<Row>(
        _ size: Int, id: (Row) -> UUID, _ fetch: (UUID?) async throws -> [Row],
        _ body: ([Row]) async throws -> Void
    ) async throws {
        var after: UUID?
        while true {
            let page = try await fetch(after)
            try await body(page)
            guard page.count == size, let last = page.last else { return }
            after = id(last)
        }
    }
}
