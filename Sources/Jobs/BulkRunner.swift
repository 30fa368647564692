import Foundation
import JobStore
import Logging
import MomentsModel
import Storage

/// Runs bulk actions `batchSize` jobs a read. The progress (and cursor) is recorded after each
/// job, so the console shows it and another API node resumes after the last job recorded should
/// this one die; while a job is in hand (a slow delete), the runner's heartbeat goes on every
/// `staleAfter` / 3, so no other node takes a living runner's action over. Each job is acted on
/// as one `Operator` action would (PostgreSQL first, then the queue), and every action is
/// idempotent per job: jobs no longer in a status the action applies to when their turn comes
/// (the one a dead runner had in hand, say) are skipped.
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

    public init(
        jobs: Jobs, storage: (any ObjectStore)?, name: String, batchSize: Int = 100, staleAfter: Duration = .seconds(30),
        pollInterval: Duration = .seconds(1)
    ) {
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
                    jobs.logger.notice(
                        "running a bulk action",
                        metadata: [
                            "operation": "\(operation.id)", "action": "\(operation.action.rawValue)",
                            "actor": "\(operation.actor)",
                        ])
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
                guard !batch.isEmpty else {
                    try await jobs.store.finishBulk(operation.id, runner: name, state: .done, message: nil)
                    break
                }
                for job in batch {
                    let result = await keepingAlive(operation.id) { await act(operation.action, on: job.id, as: worker) }
                    let cursor = JobCursor(createdAt: job.createdAt, id: job.id)
                    let (done, skipped, failed) = (result == .done ? 1 : 0, result == .skipped ? 1 : 0, result == .failed ? 1 : 0)
                    guard
                        try await jobs.store.advanceBulk(
                            operation.id, runner: name, cursor: cursor, done: done, skipped: skipped,
                            failed: failed)
                    else {
                        return (try? await jobs.store.operation(operation.id)) ?? operation  // stopped, or no longer ours
                    }
                    operation.cursor = cursor
                    operation.done += done
                    operation.skipped += skipped
                    operation.failed += failed
                }
                progress(operation)
            }
        } catch {
            jobs.logger.error("bulk action interrupted; another runner resumes it", metadata: ["operation": "\(operation.id)", "error": "\(error)"])
        }
        return (try? await jobs.store.operation(operation.id)) ?? operation
    }

    enum JobResult { case done, skipped, failed }

    /// `body`'s value, with the runner's heartbeat recorded every `staleAfter` / 3 meanwhile.
    private func keepingAlive<T: Sendable>(_ id: Int64, _ body: () async -> T) async -> T {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    do { try await Task.sleep(for: staleAfter / 3) } catch { return }
                    _ = try? await jobs.store.touchBulk(id, runner: name)
                }
            }
            let value = await body()
            group.cancelAll()
            return value
        }
    }

    private func act(_ action: OperatorAction, on id: UUID, as worker: Operator) async -> JobResult {
        do {
            switch action {
            case .retry:
                if case .requeued = try await jobs.retry(id, detail: "retried by \(worker.actor) (bulk)") { return .done }
            case .cancel:
                if case .cancelled = try await jobs.cancel(id, detail: "cancelled by \(worker.actor) (bulk)") { return .done }
            case .delete:
                if case .deleted = try await worker.deleteWithoutAudit(id).0 { return .done }
            case .pause, .resume, .redeliver, .erase, .eraseDevice:
                return .skipped
            }
            return .skipped
        } catch {
            jobs.logger.warning("bulk action failed on a job", metadata: ["job_id": "\(id)", "error": "\(error)"])
            return .failed
        }
    }
}
