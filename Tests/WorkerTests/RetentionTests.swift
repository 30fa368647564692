import Foundation
import Jobs
import MomentsModel
import MomentsSupport
import PostgresNIO
import ServiceTestSupport
import Storage
import Testing
import Worker

@testable import JobStore

/// The retention sweep against real PostgreSQL and SeaweedFS: objects go first, rows only after.
@Suite("Retention: sources after success, objects and rows after their days (real PostgreSQL and SeaweedFS)", .quiet)
struct RetentionTests {
    /// A finished job made to look as old as `daysAgo`, with its source (and result, when completed) in storage.
    struct Made {
        var id: UUID
        var sourceKey: String
        var resultKey: String?
    }

    static func make(
        _ store: JobStore, _ storage: any ObjectStore, ending status: JobStatus, daysAgo: Int,
        sourceDeleted: Bool = false
    ) async throws -> Made {
        let id = UUID()
        let folder = "retention-test/\(id.uuidString.lowercased())"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-retention-\(id.uuidString).bin")
        try Data(repeating: 7, count: 1000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let sourceKey = "\(folder)/source.mov"
        if !sourceDeleted { _ = try await storage.put(key: sourceKey, from: file, contentType: "video/quicktime") }
        let job = try await store.create(NewJob(id: id, originalFilename: "IMG_\(daysAgo).MOV", sourceKey: sourceKey, maxAttempts: 1))
        var resultKey: String?
        if status != .pending {
            guard case .claimed(let lease, _) = try await store.claim(job.id, worker: "w", lease: .seconds(60)) else {
                throw TestFailure("could not claim \(id)")
            }
            switch status {
            case .completed:
                let key = "\(folder)/highlight.mp4"
                _ = try await storage.put(key: key, from: file, contentType: "video/mp4")
                #expect(try await store.complete(lease, result: JobResult(resultKey: key, resultSize: 1000)))
                resultKey = key
            case .failed:
                _ = try await store.fail(lease, code: "not_a_video", message: "Not a video.", retryable: false, retryDelay: .zero)
            case .cancelled:
                _ = try await store.cancel(job.id)
            case .pending, .processing:
                break
            }
        }
        if sourceDeleted { #expect(try await store.markSourceDeleted(id)) }
        try await store.client.query(
            """
            UPDATE jobs SET created_at = now() - make_interval(days => \(daysAgo + 1)::int),
                            completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE now() - make_interval(days => \(daysAgo)::int) END
            WHERE id = \(id)
            """)
        return Made(id: id, sourceKey: sourceKey, resultKey: resultKey)
    }

    static func exists(_ storage: any ObjectStore, _ key: String) async throws -> Bool {
        do {
            _ = try await storage.head(key: key)
            return true
        } catch  where error.code == .notFound {
            return false
        }
    }

    @Test(
        "Multipart uploads cut off (a resumable upload never started, a source or highlight whose upload a crash stopped) are aborted a day after they began, under every prefix the service writes, page after page; younger ones stay"
    )
    func abandonedUploads() async throws {
        let storage = try HighlightJobTests.s3()
        let resumable = try #require(storage.resumable)
        try await TestServices.withDatabase { store, _ in
            // Under prefixes of this test's own (other tests' uploads are as old as these).
            let id = UUID().uuidString.lowercased()
            let prefixes = RetentionSweeper.uploadPrefixes.map { $0 + id }
            var started: [String] = []
            for prefix in prefixes {
                for n in 0..<3 { started.append(try await resumable.startUpload(key: "\(prefix)-\(n).mp4", contentType: "video/mp4")) }
            }
            let sweeper = RetentionSweeper(store: store, storage: storage, configuration: RetentionConfiguration(), logger: TestServices.logger)
            #expect(try await sweeper.abortAbandonedUploads(now: Date(), under: prefixes, pageSize: 2) == 0, "too young")
            var listed: [String] = []
            for prefix in prefixes { listed += try await resumable.unfinishedUploads(prefix: prefix).map(\.uploadID) }
            #expect(Set(listed) == Set(started) && listed.count == 9, "every page listed once")
            // Two a page: each prefix's three uploads take two pages.
            #expect(try await sweeper.abortAbandonedUploads(now: Date().addingTimeInterval(26 * 3600), under: prefixes, pageSize: 2) == 9)
            for prefix in prefixes { #expect(try await resumable.unfinishedUploads(prefix: prefix).isEmpty, "\(prefix)") }
        }
    }

    @Test("Objects of jobs past RESULT_RETENTION_DAYS go first, rows past JOB_RETENTION_DAYS after; younger and unfinished jobs stay")
    func sweep() async throws {
        let storage = try HighlightJobTests.s3()
        try await TestServices.withDatabase { store, _ in
            let fresh = try await Self.make(store, storage, ending: .completed, daysAgo: 5)
            let month = try await Self.make(store, storage, ending: .completed, daysAgo: 40)
            let failed = try await Self.make(store, storage, ending: .failed, daysAgo: 40)
            let sourceGone = try await Self.make(store, storage, ending: .completed, daysAgo: 45, sourceDeleted: true)
            let ancient = try await Self.make(store, storage, ending: .cancelled, daysAgo: 100)
            let waiting = try await Self.make(store, storage, ending: .pending, daysAgo: 200)

            let sweeper = RetentionSweeper(
                store: store, storage: storage,
                configuration: RetentionConfiguration(resultDays: 30, jobDays: 90), logger: TestServices.logger)
            let report = try #require(try await sweeper.sweepExclusively())
            #expect(report.jobCounts == [4, 0, 1], "\(report)")

            // Young: everything stays.
            #expect(try await Self.exists(storage, fresh.sourceKey))
            #expect(try await Self.exists(storage, fresh.resultKey!))
            #expect(try await store.job(fresh.id)?.resultExpiredAt == nil)
            // Past the result retention: objects gone, the row (and its history) stays, marked.
            for made in [month, failed, sourceGone] {
                #expect(try await !Self.exists(storage, made.sourceKey))
                if let result = made.resultKey { #expect(try await !Self.exists(storage, result)) }
                let job = try #require(try await store.job(made.id))
                #expect(job.resultExpiredAt != nil && job.sourceDeletedAt != nil)
                #expect(try await store.events(made.id).count >= 3)
            }
            let gone = try #require(try await store.job(sourceGone.id))
            let sourceDeletedAt = try #require(gone.sourceDeletedAt), expiredAt = try #require(gone.resultExpiredAt)
            #expect(sourceDeletedAt < expiredAt, "the earlier deletion time is kept")
            // Past the job retention: the objects and then the row, with its events, are gone.
            #expect(try await !Self.exists(storage, ancient.sourceKey))
            #expect(try await store.job(ancient.id) == nil)
            #expect(try await store.events(ancient.id).isEmpty)
            // Not finished, however old: untouched.
            #expect(try await Self.exists(storage, waiting.sourceKey))
            #expect(try await store.job(waiting.id)?.status == .pending)

            // Nothing more is due: a second sweep changes nothing.
            #expect(try await sweeper.sweep().jobCounts == [0, 0, 0])
            try? await storage.delete(key: fresh.sourceKey)
            try? await storage.delete(key: fresh.resultKey!)
            try? await storage.delete(key: waiting.sourceKey)
        }
    }

    @Test("When storage refuses, the rows stay as they are (even past JOB_RETENTION_DAYS) and the next sweep finishes the job")
    func storageFailure() async throws {
        let storage = try HighlightJobTests.s3()
        var environment = Settings(ProcessInfo.processInfo.environment)
        environment["S3_SECRET_ACCESS_KEY"] = "not-the-secret-\(UUID().uuidString)"
        let url = try TestServices.environment("STORAGE_URL")
        let refusing = S3ObjectStore(configuration: try StorageConfiguration.s3(bucket: URL(string: url)?.host ?? "", environment: environment))
        try await TestServices.withDatabase { store, _ in
            let old = try await Self.make(store, storage, ending: .completed, daysAgo: 100)
            let configuration = RetentionConfiguration(resultDays: 30, jobDays: 90)
            let broken = RetentionSweeper(store: store, storage: refusing, configuration: configuration, logger: TestServices.logger)
            #expect(try await broken.sweep().jobCounts == [0, 1, 0])
            let kept = try #require(try await store.job(old.id))
            #expect(kept.resultExpiredAt == nil)
            #expect(try await Self.exists(storage, old.sourceKey))
            #expect(try await Self.exists(storage, old.resultKey!))

            let working = RetentionSweeper(store: store, storage: storage, configuration: configuration, logger: TestServices.logger)
            #expect(try await working.sweep().jobCounts == [1, 0, 1])
            #expect(try await !Self.exists(storage, old.sourceKey))
            #expect(try await !Self.exists(storage, old.resultKey!))
            #expect(try await store.job(old.id) == nil)
        }
    }

    @Test("One sweep at a time: a second process finds the lock taken and does nothing")
    func oneAtATime() async throws {
        let storage = try HighlightJobTests.s3()
        try await TestServices.withDatabase { store, _ in
            let sweeper = RetentionSweeper(store: store, storage: storage, configuration: RetentionConfiguration(), logger: TestServices.logger)
            let inner = try await store.exclusively("moments.retention") { try await sweeper.sweepExclusively() }
            #expect(inner == .some(nil), "the lock was held, so the second sweep did not run")
            #expect(try await sweeper.sweepExclusively()?.jobCounts == [0, 0, 0], "the lock is free again, so this one ran")
        }
    }

    @Test(
        "Settings: defaults, 0 keeps for ever, and refusals that name the variable",
        arguments: [
            (["JOB_RETENTION_DAYS": "7"], "JOB_RETENTION_DAYS must be 0 (keep) or at least 32"),
            (
                ["RESULT_RETENTION_DAYS": "60", "JOB_RETENTION_DAYS": "40"],
                "RESULT_RETENTION_DAYS (60) cannot be longer than JOB_RETENTION_DAYS (40)"
            ),
            (["RESULT_RETENTION_DAYS": "a month"], "RESULT_RETENTION_DAYS must be a whole number"),
            (["DELETE_SOURCE_AFTER_SUCCESS": "maybe"], "DELETE_SOURCE_AFTER_SUCCESS must be true or false"),
            (["RETENTION_SWEEP_SECONDS": "1"], "RETENTION_SWEEP_SECONDS must be a whole number from 10"),
        ])
    func settings(environment: [String: String], refusal: String) throws {
        #expect(try RetentionConfiguration(environment: [:]) == RetentionConfiguration())
        #expect(try RetentionConfiguration(environment: [:]).resultDays == 30)
        let forever = try RetentionConfiguration(environment: [
            "RESULT_RETENTION_DAYS": "0", "JOB_RETENTION_DAYS": "0",
            "DELETE_SOURCE_AFTER_SUCCESS": "false",
        ])
        #expect(forever.resultDays == nil && forever.jobDays == nil && !forever.deleteSourceAfterSuccess)
        #expect(try RetentionConfiguration(environment: ["RESULT_RETENTION_DAYS": "400", "JOB_RETENTION_DAYS": "0"]).resultDays == 400)
        do {
            _ = try RetentionConfiguration(environment: Settings(environment))
            Issue.record("\(environment) was accepted")
        } catch {
            #expect(error.message.hasPrefix(refusal), "\(error.message)")
        }
    }

    @Test(
        "Deleting a job deletes every object it has (source, highlight, poster, thumbnails) and the audit says how many; a source already gone is not counted"
    )
    func deletingAJob() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-delete-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try LocalObjectStore(root: folder)
        try await TestServices.withDatabase { store, _ in
            let controls = Operator(jobs: Jobs(store: store, queue: MemoryQueue(), logger: TestServices.logger), storage: storage, actor: "test")
            let file = folder.appendingPathComponent("x.bin")
            try Data(repeating: 3, count: 100).write(to: file)
            /// A completed job and its keys (source first), each object stored but the source when it is gone.
            func completed(sourceGone: Bool) async throws -> (UUID, [String]) {
                let id = UUID()
                let name = id.uuidString.lowercased()
                let keys = ["sources/\(name).mov", "results/\(name)-1.mp4", "results/\(name)-1-poster.jpg", "results/\(name)-1-thumbnails.jpg"]
                for key in keys.dropFirst(sourceGone ? 1 : 0) { _ = try await storage.put(key: key, from: file, contentType: "video/mp4") }
                let job = try await store.create(NewJob(id: id, sourceKey: keys[0], maxAttempts: 1))
                guard case .claimed(let lease, _) = try await store.claim(job.id, worker: "w", lease: .seconds(60)) else {
                    throw TestFailure("could not claim")
                }
                #expect(
                    try await store.complete(
                        lease, result: JobResult(resultKey: keys[1], resultSize: 100, posterKey: keys[2], thumbnailsKey: keys[3])))
                if sourceGone { #expect(try await store.markSourceDeleted(id)) }
                return (id, keys)
            }
            let (whole, keys) = try await completed(sourceGone: false)
            #expect(try await controls.delete(whole) == .deleted(objectKeys: keys))
            for key in keys { #expect(try await !Self.exists(storage, key), "\(key) is deleted with its job") }
            #expect(try await store.operations(job: whole).first?.message == "Deleted the job and 4 of its 4 objects.")

            let (sourceless, others) = try await completed(sourceGone: true)
            #expect(try await controls.delete(sourceless) == .deleted(objectKeys: Array(others.dropFirst())))
            for key in others { #expect(try await !Self.exists(storage, key), "\(key)") }
            #expect(try await store.operations(job: sourceless).first?.message == "Deleted the job and 3 of its 3 objects.")
        }
    }

    @Test(
        "Objects no job names (a refused attempt's result, a source whose insert failed, a direct upload never started) go once past their grace; named, young and foreign ones stay"
    )
    func orphans() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-orphans-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try LocalObjectStore(root: folder)
        try await TestServices.withDatabase { store, _ in
            let id = UUID()
            let name = id.uuidString.lowercased()
            let job = try await store.create(NewJob(id: id, sourceKey: "sources/\(name).mov", maxAttempts: 3))
            guard case .claimed(let lease, _) = try await store.claim(job.id, worker: "w", lease: .seconds(60)) else {
                throw TestFailure("could not claim")
            }
            #expect(try await store.complete(lease, result: JobResult(resultKey: "results/\(name)-1.mp4", resultSize: 10)))
            let old = Date(timeIntervalSinceNow: -3 * 86_400), hours = Date(timeIntervalSinceNow: -5 * 3600)
            let recent = Date(timeIntervalSinceNow: -2.5 * 3600)
            let objects: [(key: String, modified: Date, kept: Bool)] = [
                ("sources/\(name).mov", old, true),  // the job's source
                ("results/\(name)-1.mp4", old, true),  // its highlight
                ("results/\(name)-2.mp4", old, false),  // a fenced-out attempt's upload
                ("sources/\(UUID().uuidString.lowercased()).mp4", old, false),  // stored, then the insert failed
                ("sources/\(UUID().uuidString.lowercased()).mp4", hours, true),  // the same, but too young to judge
                ("uploads/\(UUID().uuidString.lowercased())", hours, false),  // staged and never started
                ("uploads/\(UUID().uuidString.lowercased())", recent, true),  // staged by a PUT that ended late: startable
                ("sources/notes.txt", old, true),  // names no job: not ours
                ("elsewhere/\(name).mov", old, true),  // another folder: not ours
            ]
            let file = folder.appendingPathComponent("x.bin")
            try Data(repeating: 1, count: 10).write(to: file)
            for object in objects {
                try await storage.put(key: object.key, from: file, contentType: "video/mp4")
                try FileManager.default.setAttributes([.modificationDate: object.modified], ofItemAtPath: try storage.fileURL(for: object.key).path)
            }
            let sweeper = RetentionSweeper(store: store, storage: storage, configuration: RetentionConfiguration(), logger: TestServices.logger)
            let report = try await sweeper.sweep()
            #expect(report.orphansDeleted == 3, "\(report)")
            for object in objects {
                #expect(try await Self.exists(storage, object.key) == object.kept, "\(object.key)")
            }
        }
    }
}

extension RetentionSweeper.Report {
    /// What a sweep did to this test's jobs: objects expired, objects that failed, rows deleted. The
    /// rest (orphans, keys, uploads) counts what the shared bucket holds from other tests.
    var jobCounts: [Int] { [objectsExpired, objectsFailed, jobsDeleted] }
}
