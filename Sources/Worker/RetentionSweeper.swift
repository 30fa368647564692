import Foundation
import JobStore
import Logging
import MomentsModel
import MomentsSupport
import Storage

/// How long Moments keeps what it stores.
public struct RetentionConfiguration: Sendable, Equatable {
    /// Delete the uploaded source as soon as its highlight is stored and the job completed.
    public var deleteSourceAfterSuccess: Bool
    /// Days after a job ends until its highlight and source are deleted from storage (nil: kept).
    public var resultDays: Int?
    /// Days after a job ends until its row (with its events and webhook deliveries) is deleted (nil: kept).
    public var jobDays: Int?
    /// How often a worker runs the sweep (one worker at a time does).
    public var sweepInterval: Duration

    public init(deleteSourceAfterSuccess: Bool = true, resultDays: Int? = 30, jobDays: Int? = 90, sweepInterval: Duration = .seconds(3600)) {
        self.deleteSourceAfterSuccess = deleteSourceAfterSuccess
        self.resultDays = resultDays
        self.jobDays = jobDays
        self.sweepInterval = sweepInterval
    }

    /// The month's quota counts job rows, so rows must outlive the longest month.
    public static let minimumJobDays = 32

    /// `DELETE_SOURCE_AFTER_SUCCESS` (true), `RESULT_RETENTION_DAYS` (30), `JOB_RETENTION_DAYS` (90)
    /// and `RETENTION_SWEEP_SECONDS` (3600); 0 days keeps things for ever.
    public init(environment: Settings) throws(SettingError) {
        let resultDays = try Setting.integer("RESULT_RETENTION_DAYS", in: environment, default: 30, range: 0...36_500)
        let jobDays = try Setting.integer("JOB_RETENTION_DAYS", in: environment, default: 90, range: 0...36_500)
        if jobDays != 0 && jobDays < Self.minimumJobDays {
            throw SettingError(
                "JOB_RETENTION_DAYS must be 0 (keep) or at least \(Self.minimumJobDays): the monthly quota counts job rows, so they must outlive a month, not '\(jobDays)'."
            )
        }
        if jobDays != 0 && resultDays > jobDays {
            throw SettingError(
                "RESULT_RETENTION_DAYS (\(resultDays)) cannot be longer than JOB_RETENTION_DAYS (\(jobDays)): a highlight is deleted with its job's row at the latest."
            )
        }
        self.init(
            deleteSourceAfterSuccess: try Setting.boolean("DELETE_SOURCE_AFTER_SUCCESS", in: environment, default: true),
            resultDays: resultDays == 0 ? nil : resultDays, jobDays: jobDays == 0 ? nil : jobDays,
            sweepInterval: .seconds(try Setting.integer("RETENTION_SWEEP_SECONDS", in: environment, default: 3600, range: 10...604_800)))
    }

    /// Objects of jobs that ended this many days ago go: the result retention, or, when results are
    /// kept for ever, the row retention (a row is never deleted before its objects).
    var objectDays: Int? { resultDays ?? jobDays }
}

/// Deletes what has outlived its retention: first the objects in storage (highlight and source) of
/// jobs that ended long enough ago, marking each row, then the rows whose objects are gone. A
/// storage failure leaves the row as it is, so the next sweep tries again; nothing is ever left in
/// storage without a row that names it.
public struct RetentionSweeper: Sendable {
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// Jobs whose highlight and source were deleted from storage.
        public var objectsExpired = 0
        /// Jobs whose objects could not be deleted this time (storage failed); tried again next sweep.
        public var objectsFailed = 0
        /// Job rows deleted.
        public var jobsDeleted = 0
        /// Objects no job names (a refused attempt's result, the source of an insert that failed,
        /// a direct upload never started), deleted once older than `orphanGrace`.
        public var orphansDeleted = 0
        /// Idempotency keys past their day.
        public var keysDeleted = 0
        /// Resumable uploads never started, aborted (their parts deleted) past their lifetime.
        public var uploadsAborted = 0

        public init(objectsExpired: Int = 0, objectsFailed: Int = 0, jobsDeleted: Int = 0, orphansDeleted: Int = 0) {
            self.objectsExpired = objectsExpired
            self.objectsFailed = objectsFailed
            self.jobsDeleted = jobsDeleted
            self.orphansDeleted = orphansDeleted
        }

        public var description: String {
            "objects_expired=\(objectsExpired) objects_failed=\(objectsFailed) jobs_deleted=\(jobsDeleted) orphans_deleted=\(orphansDeleted) keys_deleted=\(keysDeleted) uploads_aborted=\(uploadsAborted)"
        }
    }

    let store: JobStore
    let storage: any ObjectStore
    let configuration: RetentionConfiguration
    let logger: Logger

    public init(store: JobStore, storage: any ObjectStore, configuration: RetentionConfiguration, logger: Logger) {
        self.store = store
        self.storage = storage
        self.configuration = configuration
        self.logger = logger
    }

    /// Sweeps every `sweepInterval` until cancelled; one process sweeps at a time (an advisory lock).
    public func run() async {
        guard configuration.objectDays != nil else { return }
        while !Task.isCancelled {
            do {
                _ = try await sweepExclusively()
            } catch {
                logger.warning("retention sweep failed; trying again later", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: configuration.sweepInterval)
        }
    }

    /// One sweep unless another process is sweeping (then nil).
    public func sweepExclusively(now: Date = Date()) async throws -> Report? {
        let sweeper = self
        return try await store.exclusively("moments.retention") { try await sweeper.sweep(now: now) }
    }

    /// One sweep, in batches until nothing is left that is due.
    public func sweep(now: Date = Date()) async throws(JobStoreError) -> Report {
        var report = Report()
        if let days = configuration.objectDays {
            let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
            var failed = Set<UUID>()
            while !Task.isCancelled {
                let due = try await store.jobsWithObjects(finishedBefore: cutoff, limit: 100 + failed.count)
                    .filter { !failed.contains($0.id) }
                if due.isEmpty { break }
                let failedBefore = report.objectsFailed
                for job in due {
                    do {
                        try await expireObjects(of: job)
                        if try await store.markObjectsExpired(job.id) { report.objectsExpired += 1 }
                    } catch {
                        failed.insert(job.id)
                        report.objectsFailed += 1
                        logger.warning(
                            "could not delete an expired job's objects; the next sweep tries again",
                            metadata: ["job_id": "\(job.id.uuidString.lowercased())", "error": "\(error)"])
                    }
                }
                // A whole batch failing means storage is down: leave the rest for the next sweep.
                if report.objectsFailed - failedBefore == due.count { break }
            }
        }
        if let days = configuration.jobDays {
            let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
            while !Task.isCancelled {
                let deleted = try await store.deleteExpiredJobs(finishedBefore: cutoff)
                report.jobsDeleted += deleted
                if deleted == 0 { break }
            }
        }
        while !Task.isCancelled {
            let deleted = try await store.deleteExpiredIdempotencyKeys()
            report.keysDeleted += deleted
            if deleted == 0 { break }
        }
        do {
            report.orphansDeleted = try await sweepOrphans(now: now)
        } catch {
            logger.warning("could not sweep storage for orphaned objects; the next sweep tries again", metadata: ["error": "\(error)"])
        }
        do {
            report.uploadsAborted = try await abortAbandonedUploads(now: now)
        } catch {
            logger.warning("could not abort abandoned resumable uploads; the next sweep tries again", metadata: ["error": "\(error)"])
        }
        if report != Report() { logger.notice("retention sweep", metadata: ["report": "\(report)"]) }
        return report
    }

    /// How old an object no job names must be before it goes: a source is stored a moment before
    /// its row is written and a result a moment before its job completes, so a day is ample.
    static let orphanGrace: TimeInterval = 86_400
    /// A direct upload's staged object is never named by a job; once older than its reservation
    /// may live (the longest upload URL, an hour, and `HighlightLimits.stagedUploadHours` after
    /// it), no start can take it.
    static let stagedGrace = TimeInterval((1 + HighlightLimits.stagedUploadHours) * 3600)

    /// A resumable upload's reservation lives `HighlightLimits.resumableUploadHours`; an hour past
    /// that, its multipart upload can never be started. Our own multipart uploads of sources and
    /// highlights take minutes, so one that old was cut off by a crash.
    static let abandonedUploadGrace = TimeInterval(HighlightLimits.resumableUploadHours * 3600 + 3600)

    /// Where the service writes multipart uploads: resumable uploads, and big sources and highlights.
    public static let uploadPrefixes = [ObjectKey.Folder.uploads, .sources, .results].map(\.rawValue)

    /// Aborts multipart uploads under `prefixes` begun more than `abandonedUploadGrace` ago (a
    /// resumable upload never started, a source or highlight whose upload a crash cut off),
    /// deleting their parts, listing `pageSize` at a time. Stores without resumable uploads have none.
    public func abortAbandonedUploads(now: Date, under prefixes: [String] = uploadPrefixes, pageSize: Int = 1000) async throws -> Int {
        guard let resumable = storage.resumable else { return 0 }
        var aborted = 0
        for prefix in prefixes {
            var marker: UploadListMarker?
            repeat {
                let page = try await resumable.unfinishedUploads(prefix: prefix, after: marker, limit: pageSize)
                for upload in page.uploads where (upload.initiated ?? now) < now.addingTimeInterval(-Self.abandonedUploadGrace) {
                    try await resumable.abortUpload(key: upload.key, uploadID: upload.uploadID)
                    aborted += 1
                }
                marker = page.next
            } while marker != nil && !Task.isCancelled
        }
        return aborted
    }

    /// Lists `sources/`, `results/`, `music-uploads/` and `uploads/` a page at a time and deletes the objects no job
    /// names (looked up by the job id in the key) once they are older than their grace. Keys that
    /// name no job id are not ours and stay.
    func sweepOrphans(now: Date) async throws -> Int {
        var deleted = 0
        let folders: [(ObjectKey.Folder, TimeInterval)] = [
            (.sources, Self.orphanGrace), (.results, Self.orphanGrace),
            (.musicUploads, Self.orphanGrace), (.uploads, Self.stagedGrace),
        ]
        for (folder, grace) in folders {
            let prefix = folder.rawValue
            var after: String? = nil
            while !Task.isCancelled {
                let page = try await storage.list(prefix: prefix, after: after, limit: 500)
                guard let last = page.last else { break }
                after = last.key
                let old = page.filter { $0.lastModified < now.addingTimeInterval(-grace) }
                let owners = old.compactMap { object in ObjectKey.job(in: object.key).map { (object.key, $0) } }
                let kept = folder == .uploads ? [] : try await store.objectKeys(ofJobs: owners.map(\.1))
                for (key, _) in owners where !kept.contains(key) {
                    try await storage.delete(key: key)
                    deleted += 1
                }
            }
        }
        return deleted
    }

    private func expireObjects(of job: JobRecord) async throws(StorageError) {
        for key in job.storedObjectKeys { try await storage.delete(key: key) }
    }
}
