import Foundation
import JobQueue
import JobStore
import Jobs
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Storage
import Testing
import Worker

/// Real jobs end to end below the HTTP layer: the source in SeaweedFS, the row in PostgreSQL, the
/// queue in Redis, the engine on a fixture made by our own encoder.
@Suite("Highlight jobs through the worker (real PostgreSQL, Redis and SeaweedFS)", .alone)
struct HighlightJobTests {
    static var footage: String { TestFootage.twentySeconds }

    static func s3() throws -> S3ObjectStore {
        let url = try TestServices.environment("STORAGE_URL")
        return S3ObjectStore(
            configuration: try StorageConfiguration.s3(
                bucket: URL(string: url)?.host ?? "",
                environment: Settings(ProcessInfo.processInfo.environment)))
    }

    static func configuration() -> WorkerConfiguration {
        WorkerConfiguration(
            name: "engine-worker", concurrency: 1, lease: .seconds(10), heartbeat: .seconds(2),
            cancelCheck: .milliseconds(250), retryBase: .milliseconds(100), pollBlock: .milliseconds(300),
            reconcileInterval: .seconds(30), progressInterval: .milliseconds(100))
    }

    /// Uploads `file` as a job's source, creates and queues the job, runs a worker until `done` holds.
    static func run(
        source file: String, filename: String = "IMG_0042.MOV", target: Double = 8, quality: Quality = .low,
        _ body: @Sendable (JobStore, S3ObjectStore, UUID, URL) async throws -> Void
    ) async throws {
        let storage = try s3()
        try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let id = UUID()
                let sourceKey = "sources/\(id.uuidString.lowercased()).mov"
                try await storage.put(key: sourceKey, from: URL(fileURLWithPath: file), contentType: "video/mp4")
                let jobs = Jobs(store: store, queue: queue, logger: TestServices.logger)
                _ = try await jobs.submit(NewJob(id: id, originalFilename: filename, sourceKey: sourceKey, targetDuration: target, quality: quality))
                let work = FileManager.default.temporaryDirectory.appendingPathComponent("moments-work-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: work) }
                let worker = QueueWorker(
                    configuration: configuration(), jobs: jobs,
                    handler: HighlightJobHandler(storage: storage, workDirectory: work), logger: TestServices.logger)
                let task = Task { await worker.run() }
                do {
                    try await body(store, storage, id, work)
                } catch {
                    task.cancel()
                    throw error
                }
                task.cancel()
                await task.value
                try? await storage.delete(key: sourceKey)
                for attempt in 1...3 { try? await storage.delete(key: ObjectKey.result(of: id, attempt: attempt)) }
            }
        }
    }

    @Test("Upload → highlight: progress climbs through the stages, the result is stored and playable, nothing is left behind")
    func endToEnd() async throws {
        try await Self.run(source: Self.footage) { store, storage, id, work in
            var seen: [(Int, String)] = []
            let finished = try await TestServices.eventually(timeout: .seconds(120)) {
                guard let job = try await store.job(id) else { return false }
                if job.status == .processing, let stage = job.stage, seen.last.map({ $0 != (job.progress, stage) }) ?? true {
                    seen.append((job.progress, stage))
                }
                return job.status.isTerminal
            }
            #expect(finished)
            let job = try #require(try await store.job(id))
            #expect(job.status == .completed, "\(job.errorCode ?? "") \(job.errorMessage ?? "")")
            #expect(job.resultKey == ObjectKey.result(of: id, attempt: job.attempt) && job.progress == 100)
            #expect(abs((job.sourceDuration ?? 0) - 20) < 0.1)
            #expect((job.segmentsSelected ?? 0) >= 2)
            #expect(seen.map(\.0) == seen.map(\.0).sorted(), "progress never goes backwards: \(seen)")
            // Stages seen by polling come in the order the job goes through them. Which ones a poll catches
            // depends on the machine's load (a loaded runner once slept through all of rendering), so only
            // the order and that progress was reported along the way are required here; the engine's own
            // tests check every stage's progress callback deterministically.
            let order = ["starting", "downloading", "probing", "analyzing", "selecting", "rendering", "finishing", "uploading"]
            let stages = seen.map(\.1).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
            #expect(
                stages.allSatisfy(order.contains) && stages.compactMap(order.firstIndex) == stages.compactMap(order.firstIndex).sorted(),
                "\(seen)")
            #expect(stages.count >= 2, "\(seen)")
            // The stored highlight: its size as recorded, and about the target length.
            let stored = try await storage.head(key: try #require(job.resultKey))
            #expect(stored.size == job.resultSize && stored.contentType == "video/mp4")
            let local = work.appendingPathComponent("downloaded.mp4")
            try await storage.get(key: stored.key, to: local)
            #expect(abs(try TestFootage.duration(local.path) - 8) <= 0.5)
            try FileManager.default.removeItem(at: local)
            #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty, "the job's work folder is gone")
            // The source is deleted once the highlight is stored (DELETE_SOURCE_AFTER_SUCCESS defaults to true).
            let sourceDeleted = try await TestServices.eventually(timeout: .seconds(5)) { try await store.job(id)?.sourceDeletedAt != nil }
            #expect(sourceDeleted)
            await #expect(throws: StorageError.self) { try await storage.head(key: job.sourceKey) }
        }
    }

    @Test("A file that is not a video fails at once, without retries, with the engine's code and sentence")
    func badMedia() async throws {
        let text = FileManager.default.temporaryDirectory.appendingPathComponent("moments-not-a-video-\(UUID().uuidString).mov")
        try Data("This is a shopping list, not a video.\n".utf8).write(to: text)
        defer { try? FileManager.default.removeItem(at: text) }
        try await Self.run(source: text.path) { store, storage, id, _ in
            #expect(try await TestServices.eventually { try await store.job(id)?.status == .failed })
            let job = try #require(try await store.job(id))
            #expect(job.errorCode == "not_a_video" && job.attempt == 1)
            #expect(job.message?.isEmpty == false && job.message == job.errorMessage)
            #expect(try await store.events(id).map(\.to) == [.pending, .processing, .failed])
            // A failed job keeps its source until the retention sweep (an operator may retry it).
            #expect(job.sourceDeletedAt == nil)
            #expect(try await storage.head(key: job.sourceKey).size > 0)
        }
    }

    @Test("A source missing from storage fails at once with source_missing")
    func missingSource() async throws {
        let job = try await Self.failedJob(NewJob(id: UUID(), sourceKey: "sources/never-uploaded.mp4"))
        #expect(job.errorCode == "source_missing" && job.attempt == 1)
    }

    @Test("A stored source longer than the file accepted is never downloaded whole: the job fails at once with source_changed")
    func changedSource() async throws {
        let id = UUID()
        let key = "sources/\(id.uuidString.lowercased()).mp4"
        let stored = try await Self.s3().put(key: key, from: URL(fileURLWithPath: Self.footage), contentType: "video/mp4")
        let job = try await Self.failedJob(NewJob(id: id, sourceKey: key, sourceSize: stored.size - 1000))
        #expect(job.errorCode == "source_changed" && job.attempt == 1, "\(String(describing: job.errorCode))")
        try await Self.s3().delete(key: key)
    }

    /// Submits `job` to a worker over SeaweedFS and returns its row once it has failed.
    static func failedJob(_ job: NewJob) async throws -> JobRecord {
        let storage = try Self.s3()
        return try await TestServices.withDatabase { store, _ in
            try await TestServices.withQueue { queue in
                let jobs = Jobs(store: store, queue: queue, logger: TestServices.logger)
                _ = try await jobs.submit(job)
                let worker = QueueWorker(
                    configuration: Self.configuration(), jobs: jobs,
                    handler: HighlightJobHandler(storage: storage), logger: TestServices.logger)
                let task = Task { await worker.run() }
                defer { task.cancel() }
                #expect(try await TestServices.eventually { try await store.job(job.id)?.status == .failed })
                return try #require(try await store.job(job.id))
            }
        }
    }

    @Test("Cancelling a job while the engine runs stops it within 2 s and leaves no files and no result")
    func cancelWhileRendering() async throws {
        try await Self.run(source: Self.footage, target: 15, quality: .high) { store, storage, id, work in
            let running = try await TestServices.eventually(timeout: .seconds(60)) {
                guard let job = try await store.job(id) else { return false }
                return job.status == .processing && job.progress >= 5 || job.status.isTerminal
            }
            #expect(running)
            try #require(try await store.job(id)?.status == .processing, "the job finished before it could be cancelled")
            let cancelledAt = ContinuousClock.now
            #expect(try await store.cancel(id) == .cancelled(from: .processing))
            let cleaned = try await TestServices.eventually(timeout: .seconds(2)) {
                try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty
            }
            #expect(cleaned, "the work folder was removed within 2 s")
            let stoppedIn = ContinuousClock.now - cancelledAt
            // No result, even when the cancellation arrived as the highlight was being stored.
            let noResult = try await TestServices.eventually(timeout: .seconds(2)) {
                do {
                    _ = try await storage.head(key: ObjectKey.result(of: id, attempt: 1))
                    return false
                } catch {
                    return (error as? StorageError)?.code == .notFound
                }
            }
            #expect(noResult, "no stored result")
            #expect(stoppedIn < .seconds(2), "the engine stopped and cleaned up in \(stoppedIn)")
            #expect(try await store.job(id)?.status == .cancelled)
        }
    }
}
