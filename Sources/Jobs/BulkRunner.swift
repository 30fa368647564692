import Foundation
import JobStore
import Logging
import MomentsModel
import Storage

/// Runs bulk actions in bounded batches: `batchSize` jobs, then the progress (and cursor) is
/// recorded, so the console shows it and another API node resumes from the cursor should this
/// one die. Each job is acted on as one `Operator` action would (PostgreSQL first, then the
/// queue); jobs no longer in a status the action applies to when their turn comes are skipped.
///
/// Every API node runs one (`serve`): it claims bulk actions started in the console, and those
/// whose runner stopped reporting for `staleAfter`. The command line runs its own inline (`run`).
public struct BulkRunner: Sendable {
    let storage: (any ObjectStore)?
    let jobs: Jobs
    /// This runner's name in `admin_operations.runner`.
    public let name: String
    let batchSize: Int
    let staleAfter: Duration
    let pollInterval: Duration

    public init(jobs: Jobs, storage: (any ObjectStore)?, name: String, batchSize: Int = 100, staleAfter: Duration = .seconds(30),
                pollInterval: Duration = .seconds(1)) {
        self.jobs = jobs
        self.storage = storage
        self.name = name
        self.batchSize = batchSize
        self.staleAfter = staleAfter
        self.pollInterval = pollInterval
    }

    /// Claims and runs bulk actions until the task is cancelled.
    public func serve() async {
        while !Task.isCancelled {
            do {
                if let operation = try await jobs.store.claimBulk(runner: name, staleAfter: staleAfter) {
                    jobs.logger.notice("running a bulk action", metadata: ["operation": "\(operation.id)", "action": "\(operation.action.rawValue)",
                                                                          "actor": "\(operation.actor)"])
                    _ = await run(operation)
                    continue
                }
            } catch {
                jobs.logger.warning("could not look for bulk actions", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: pollInterval)
        }
    }

    /// Runs `operation` (claimed by this runner) to its end, or until it is stopped or taken over;
    /// `progress` hears after each batch. Answers the record as it ended.
    @discardableResult
    public func run(_ operation: OperationRecord, progress: @Sendable (OperationRecord) -> Void = { _ in }) async -> OperationRecord {
        var operation = operation
        let worker = Operator(jobs: jobs, storage: storage, actor: operation.actor)
        do {
            while !Task.isCancelled {
                let batch = try await jobs.store.bulkBatch(operation, limit: batchSize)
                guard let last = batch.last else {
                    try await jobs.store.finishBulk(operation.id, runner: name, state: .done, message: nil)
                    break
                }
                var done = 0, skipped = 0, failed = 0
                for job in batch {
                    switch await act(operation.action, on: job.id, as: worker) {
                    case .done: done += 1
                    case .skipped: skipped += 1
                    case .failed: failed += 1
                    }
                }
                let cursor = JobCursor(createdAt: last.createdAt, id: last.id)
                guard try await jobs.store.advanceBulk(operation.id, runner: name, cursor: cursor, done: done, skipped: skipped,
                                                       failed: failed) else { break }
                operation.cursor = cursor
                operation.done += done
                operation.skipped += skipped
                operation.failed += failed
                progress(operation)
            }
        } catch {
            jobs.logger.error("bulk action interrupted; another runner resumes it", metadata: ["operation": "\(operation.id)", "error": "\(error)"])
        }
        return (try? await jobs.store.operation(operation.id)) ?? operation
    }

    enum JobResult { case done, skipped, failed }

    private func act(_ action: OperatorAction, on id: UUID, as worker: Operator) async -> JobResult {
        do {
            switch action {
            case .retry:
                if case .requeued = try await jobs.retry(id, detail: "retried by \(worker.actor) (bulk)") { return .done }
            case .cancel:
                if case .cancelled = try await jobs.cancel(id, detail: "cancelled by \(worker.actor) (bulk)") { return .done }
            case .delete:
                if case .deleted = try await worker.deleteWithoutAudit(id).0 { return .done }
            case .pause, .resume, .redeliver:
                return .skipped
            }
            return .skipped
        } catch {
            jobs.logger.warning("bulk action failed on a job", metadata: ["job_id": "\(id)", "error": "\(error)"])
            return .failed
        }
    }
}
