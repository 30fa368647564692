import Foundation
import JobStore
import Jobs
import ServiceTestSupport
import Storage
import Synchronization
import Testing

/// Bulk actions over real PostgreSQL and a folder of objects whose deletes are slow, with a second
/// runner waiting to take over any action whose runner stops reporting.
@Suite("Bulk actions (real PostgreSQL)", .quiet)
struct BulkRunnerTests {
    /// Deletes that take `delay` each, counted per key.
    final class SlowDeletes: ForwardingObjectStore {
        let inner: any ObjectStore
        let delay: Duration
        private let deletes = Mutex<[String: Int]>([:])

        init(_ inner: any ObjectStore, delay: Duration) {
            self.inner = inner
            self.delay = delay
        }

        var deleted: [String: Int] { deletes.withLock { $0 } }

        func delete(key: String) async throws(StorageError) {
            deletes.withLock { $0[key, default: 0] += 1 }
            try? await Task.sleep(for: delay)
            try await inner.delete(key: key)
        }
    }

    @Test(
        "A bulk delete of one batch that takes three times the takeover time: its runner keeps it, each job is deleted once, and the counts are the truth"
    )
    func slowBatch() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-bulk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = SlowDeletes(try LocalObjectStore(root: folder), delay: .milliseconds(500))
        try await TestServices.withDatabase { store, _ in
            let jobs = Jobs(store: store, queue: MemoryQueue(), logger: TestServices.logger)
            let file = folder.appendingPathComponent("x.bin")
            try Data(repeating: 1, count: 10).write(to: file)
            var keys: [String] = []
            for _ in 0..<6 {
                let id = UUID()
                let key = "sources/\(id.uuidString.lowercased()).mov"
                _ = try await storage.put(key: key, from: file, contentType: "video/mp4")
                _ = try await store.create(NewJob(id: id, sourceKey: key))
                #expect(try await store.cancel(id) == .cancelled(from: .pending))
                keys.append(key)
            }
            let operation = try await store.startBulk(
                actor: "test", action: .delete, filter: JobFilter(statuses: [.cancelled]),
                matched: keys.count, runner: "first")
            // Taken over after 1 s without a heartbeat; the batch (six deletes of 0.5 s) takes 3 s.
            let first = BulkRunner(jobs: jobs, storage: storage, name: "first", batchSize: 100, staleAfter: .seconds(1))
            let second = BulkRunner(
                jobs: jobs, storage: storage, name: "second", batchSize: 100, staleAfter: .seconds(1),
                pollInterval: .milliseconds(100))
            let waiting = Task { await second.serve() }
            defer { waiting.cancel() }
            let ended = await first.run(operation)
            waiting.cancel()
            #expect(ended.runner == "first", "not taken over from a runner at work")
            #expect(ended.state == .done && ended.done == keys.count && ended.skipped == 0 && ended.failed == 0, "\(ended)")
            #expect(storage.deleted == Dictionary(uniqueKeysWithValues: keys.map { ($0, 1) }), "each deleted once: \(storage.deleted)")
            #expect(try await store.listJobs().isEmpty)
        }
    }
}
