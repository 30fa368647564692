import Foundation
import JobStore
import Jobs
import MomentsModel
import ServiceTestSupport
import Storage
import Synchronization
import Testing
import Worker

/// A worker cut off from PostgreSQL past its lease keeps working; when it comes back, another
/// attempt has taken the job over and completed it. Its late upload must neither replace nor
/// delete the highlight of the attempt that took over.
@Suite("Fenced-out attempts (real PostgreSQL, Redis and SeaweedFS)", .alone)
struct FencedResultTests {
    /// Storage whose result uploads wait at a gate until the test opens it.
    final class GatedStore: ForwardingObjectStore {
        let inner: any ObjectStore
        private let state = Mutex<(arrived: [String], open: Bool)>(([], false))

        init(_ inner: any ObjectStore) { self.inner = inner }

        var arrived: [String] { state.withLock { $0.arrived } }
        func open() { state.withLock { $0.open = true } }

        func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo {
            if key.hasPrefix("results/") {
                state.withLock { $0.arrived.append(key) }
                while !state.withLock({ $0.open }) { try? await Task.sleep(for: .milliseconds(20)) }
            }
            return try await inner.put(key: key, from: file, contentType: contentType)
        }
    }

    @Test("The late upload of an attempt that lost its lease leaves the new owner's highlight whole, and removes its own")
    func lateUploadAfterTakeover() async throws {
        let s3 = try HighlightJobTests.s3()
        let storage = GatedStore(s3)
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let id = UUID()
                let sourceKey = "sources/\(id.uuidString.lowercased()).mov"
                try await s3.put(key: sourceKey, from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
                let jobs = Jobs(store: store, queue: queue, logger: TestServices.logger)
                _ = try await jobs.submit(NewJob(id: id, originalFilename: "IMG_0042.MOV", sourceKey: sourceKey, targetDuration: 8, quality: .low))
                let work = FileManager.default.temporaryDirectory.appendingPathComponent("moments-work-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: work) }
                // A lease of 2 s that is never renewed in time: the worker goes on working after it
                // lapsed, as a worker cut off from PostgreSQL does.
                let configuration = WorkerConfiguration(
                    name: "worker-a", lease: .seconds(2), heartbeat: .seconds(600),
                    cancelCheck: .milliseconds(100), pollBlock: .milliseconds(300),
                    progressInterval: .milliseconds(100))
                let worker = QueueWorker(
                    configuration: configuration, jobs: jobs,
                    handler: HighlightJobHandler(storage: storage, workDirectory: work), logger: TestServices.logger)
                let running = Task { await worker.run() }
                defer { running.cancel() }

                // Worker A made its highlight and is about to store it.
                #expect(try await TestServices.eventually(timeout: .seconds(90)) { !storage.arrived.isEmpty })
                let lateKey = try #require(storage.arrived.first)

                // Meanwhile another attempt takes the job over and completes it with its own highlight.
                // (as soon as A's 2 s lease has lapsed).
                var takeover: JobLease?
                _ = try await TestServices.eventually(timeout: .seconds(10)) {
                    if case .claimed(let lease, _) = try await store.claim(id, worker: "worker-b", lease: .seconds(60)) { takeover = lease }
                    return takeover != nil
                }
                let lease = try #require(takeover, "the lapsed lease could not be taken over")
                let winnerKey = ObjectKey.result(of: id, attempt: lease.attempt)
                let winner = work.appendingPathComponent("winner.mp4")
                try Data("the highlight of attempt \(lease.attempt)".utf8).write(to: winner)
                let stored = try await s3.put(key: winnerKey, from: winner, contentType: "video/mp4")
                #expect(try await store.complete(lease, result: JobResult(resultKey: winnerKey, resultSize: stored.size)))

                // Worker A notices the takeover (it checks every 100 ms), then its upload goes through.
                try await Task.sleep(for: .milliseconds(500))
                storage.open()
                #expect(lateKey != winnerKey, "each attempt stores under its own key")
                let lateRemoved = try await TestServices.eventually(timeout: .seconds(10)) {
                    do { _ = try await s3.head(key: lateKey); return false } catch { return (error as? StorageError)?.code == .notFound }
                }
                #expect(lateRemoved, "the fenced-out attempt deleted what it stored, once the store said it lost")
                let copy = work.appendingPathComponent("copy.mp4")
                _ = try await s3.get(key: winnerKey, to: copy)
                #expect(try String(contentsOf: copy, encoding: .utf8) == "the highlight of attempt \(lease.attempt)")
                let job = try #require(try await store.job(id))
                #expect(job.status == .completed && job.resultKey == winnerKey && job.attempt == lease.attempt)

                running.cancel()
                await running.value
                try? await s3.delete(key: sourceKey)
                try? await s3.delete(key: winnerKey)
                try? await s3.delete(key: lateKey)
            }
        }
    }
}
