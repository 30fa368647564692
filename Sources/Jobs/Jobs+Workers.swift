import Foundation
import JobStore

/// What a worker asks of the jobs beyond claiming and recording attempts: a queue consumer per
/// slot, its place in the worker registry, progress, and the upkeep it takes its turn at.
extension Jobs {
    /// A consumer of the queue, named after the worker and its slot.
    public func consumer(named name: String) -> any JobQueueConsumer { queue.consumer(named: name) }

    /// Hands a delivered job back to the queue untouched (the service was paused while a slot
    /// waited for it).
    public func putBack(_ delivery: Delivery) async throws { try await queue.retry(delivery, after: .zero) }

    /// Moves retries whose delay has passed back onto the queue.
    public func promoteDueRetries() async throws { _ = try await queue.promoteDue() }

    /// Records an attempt's progress, fenced by its lease.
    public func progress(_ lease: JobLease, percent: Int, stage: String, message: String) async throws(JobStoreError) -> LeaseState {
        try await store.progress(lease, percent: percent, stage: stage, message: message)
    }

    /// Records that a completed job's source was deleted.
    public func sourceDeleted(_ id: UUID) async throws(JobStoreError) -> Bool { try await store.markSourceDeleted(id) }

    // MARK: The worker registry

    /// Adds the worker to the registry (again, after its row was pruned).
    public func registerWorker(_ worker: WorkerIdentity) async throws(JobStoreError) { try await store.registerWorker(worker) }

    /// The worker's heartbeat; false when the registry no longer holds it (register again).
    public func workerHeartbeat(_ id: String, running: Int, finished: Int64) async throws(JobStoreError) -> Bool {
        try await store.workerHeartbeat(id, running: running, finished: finished)
    }

    /// Records a clean stop.
    public func workerStopped(_ id: String, finished: Int64) async throws(JobStoreError) {
        try await store.workerStopped(id, finished: finished)
    }
}
