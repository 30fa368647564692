import Foundation
import JobStore
import Logging
import MomentsModel
import Storage

/// An operator's controls, shared by the console and the command line: each action goes through
/// `Jobs` (PostgreSQL first, then the queue) and leaves an audit record of who did it and how it
/// went in `admin_operations`.
public struct Operator: Sendable {
    public let jobs: Jobs
    /// Where the jobs' objects are; only deleting needs it (nil: deleting is refused).
    public let storage: (any ObjectStore)?
    /// Who acts: `console:<name>` or `cli:<user>@<host>`.
    public let actor: String

    public init(jobs: Jobs, storage: (any ObjectStore)?, actor: String) {
        self.jobs = jobs
        self.storage = storage
        self.actor = actor
    }

    var store: JobStore { jobs.store }

    /// `cli:<user>@<host>`, for the command line.
    public static var commandLineActor: String {
        let user = ProcessInfo.processInfo.userName
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "localhost"
        return "cli:\(user)@\(host)"
    }

    // MARK: One job

    public func retry(_ id: UUID, attempts: Int = 3) async throws(JobStoreError) -> RequeueOutcome {
        let outcome = try await jobs.retry(id, attempts: attempts, detail: "retried by \(actor)")
        let (succeeded, message) =
            switch outcome {
            case .requeued(let job): (true, "Retried: pending again, up to attempt \(job.maxAttempts).")
            case .notFailed(let status): (false, "Not retried: the job is \(status.rawValue); only failed jobs are retried.")
            case .notFound: (false, "Not retried: there is no such job.")
            }
        try await audit(.retry, job: id, succeeded: succeeded, message)
        return outcome
    }

    public func cancel(_ id: UUID) async throws(JobStoreError) -> CancelOutcome {
        let outcome = try await jobs.cancel(id, detail: "cancelled by \(actor)")
        let (succeeded, message) =
            switch outcome {
            case .cancelled(let from): (true, "Cancelled (it was \(from.rawValue)).")
            case .alreadyFinished(let status): (false, "Not cancelled: the job already ended \(status.rawValue).")
            case .notFound: (false, "Not cancelled: there is no such job.")
            }
        try await audit(.cancel, job: id, succeeded: succeeded, message)
        return outcome
    }

    /// Deletes an ended job: its row, events and webhook deliveries, then its objects in storage.
    public func delete(_ id: UUID) async throws(JobStoreError) -> DeleteOutcome {
        let (outcome, leftBehind) = try await deleteWithoutAudit(id)
        let (succeeded, message) =
            switch outcome {
            case .deleted(let keys):
                (
                    true,
                    "Deleted the job and \(keys.count - leftBehind.count) of its \(keys.count) objects"
                        + (leftBehind.isEmpty ? "." : "; the retention sweep deletes the rest (\(leftBehind.joined(separator: ", "))).")
                )
            case .notFinished(let status): (false, "Not deleted: the job is \(status.rawValue); cancel it first.")
            case .notFound: (false, "Not deleted: there is no such job.")
            }
        try await audit(.delete, job: id, succeeded: succeeded, message)
        return outcome
    }

    /// Deletes the row, then the objects; answers the keys that could not be deleted (orphans the
    /// retention sweep deletes later).
    func deleteWithoutAudit(_ id: UUID) async throws(JobStoreError) -> (DeleteOutcome, leftBehind: [String]) {
        guard let storage else {
            throw JobStoreError(.invalidConfiguration, "Deleting a job deletes its objects too: set STORAGE_URL to where they are.")
        }
        let outcome = try await store.deleteJob(id)
        guard case .deleted(let keys) = outcome else { return (outcome, []) }
        var leftBehind: [String] = []
        for key in keys {
            do {
                try await storage.delete(key: key)
            } catch {
                jobs.logger.warning(
                    "object of a deleted job not deleted; the retention sweep will",
                    metadata: ["key": "\(key)", "error": "\(error)"])
                leftBehind.append(key)
            }
        }
        return (outcome, leftBehind)
    }

    // MARK: The queue and webhooks

    public func pause() async throws {
        try await jobs.pause()
        try await audit(.pause, job: nil, succeeded: true, "Paused the queue: workers take no new jobs.")
    }

    public func resume() async throws {
        try await jobs.resume()
        try await audit(.resume, job: nil, succeeded: true, "Resumed the queue.")
    }

    /// Sends a webhook delivery again (a new delivery, due now); nil when there is no delivery `id`.
    public func redeliver(_ id: Int64) async throws(JobStoreError) -> WebhookDeliveryRecord? {
        let delivery = try await store.redeliverWebhook(id)
        try await audit(
            .redeliver, job: delivery?.jobID, succeeded: delivery != nil,
            delivery.map { "Redelivery \($0.id) of webhook \(id) (\($0.event) to \($0.url)) is due now." }
                ?? "Not redelivered: there is no webhook delivery \(id).")
        return delivery
    }

    // MARK: Many jobs

    /// Records a bulk `action` on every job matching `filter` that it applies to, to be run by
    /// `runner` (nil: by an API node's `BulkRunner`). Nil when the filter leaves no status the
    /// action applies to (retrying completed jobs).
    public func startBulk(_ action: OperatorAction, filter: JobFilter, runner: String?) async throws(JobStoreError) -> OperationRecord? {
        if action == .delete, storage == nil {
            throw JobStoreError(.invalidConfiguration, "Deleting jobs deletes their objects too: set STORAGE_URL to where they are.")
        }
        guard let narrowed = filter.narrowed(to: action.applicableStatuses) else { return nil }
        let matched = try await store.countJobs(narrowed)
        return try await store.startBulk(actor: actor, action: action, filter: narrowed, matched: matched, runner: runner)
    }

    private func audit(_ action: OperatorAction, job: UUID?, succeeded: Bool, _ message: String) async throws(JobStoreError) {
        try await store.recordOperation(actor: actor, action: action, job: job, succeeded: succeeded, message: message)
    }
}
