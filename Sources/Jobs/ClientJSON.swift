import Foundation
import JobStore
import MomentsContract

// A job row as clients see it: the contract's types (MomentsContract, shared with MomentsKit) made
// from `JobRecord`.

/// Where a job's files are served: `<api>/api/v1/jobs/<id>/…` on the API that answers.
public struct JobLinks: Sendable {
    /// The API's origin, e.g. `https://moments.example.com`; nil when not known (no URLs then).
    public var base: String?

    public init(base: String?) { self.base = base }

    func url(_ id: UUID, _ file: String) -> String? {
        base.map { "\($0)/api/v1/jobs/\(id.uuidString.lowercased())/\(file)" }
    }

    /// The highlight's download URL once completed.
    public func result(_ job: JobRecord) -> String? { job.status == .completed ? url(job.id, "download") : nil }
    public func poster(_ job: JobRecord) -> String? { job.status == .completed && job.posterKey != nil ? url(job.id, "poster") : nil }
    public func thumbnails(_ job: JobRecord) -> String? {
        job.status == .completed && job.thumbnailsKey != nil ? url(job.id, "thumbnails") : nil
    }
}

extension JobStatusReport {
    /// The status of `job`; the URLs only once it completed.
    public init(_ job: JobRecord, links: JobLinks) {
        self.init(JobStatusRow(job), links: links)
    }

    /// The status a poll read (`JobStore.pollStatus`).
    public init(_ job: JobStatusRow, links: JobLinks) {
        let completed = job.status == .completed
        self.init(
            jobID: job.id, status: job.status, progress: job.progress, message: job.message,
            resultURL: completed ? links.url(job.id, "download") : nil, createdAt: job.createdAt, completedAt: job.completedAt,
            originalFilename: job.originalFilename, duration: job.sourceDuration, segmentsSelected: job.segmentsSelected,
            posterURL: completed && job.hasPoster ? links.url(job.id, "poster") : nil, metadata: job.metadata)
    }
}

extension JobDetails {
    public init(_ job: JobRecord, links: JobLinks) {
        self.init(
            report: JobStatusReport(job, links: links), stage: job.stage, quality: job.quality,
            targetDuration: job.targetDuration, errorCode: job.errorCode, errorMessage: job.errorMessage, attempt: job.attempt,
            maxAttempts: job.maxAttempts, startedAt: job.startedAt, updatedAt: job.updatedAt, sourceSize: job.sourceSize,
            resultSize: job.resultSize,
            segments: job.segments?.map { SelectedSegment(start: $0.start, end: $0.end, score: $0.score) }, codec: job.codec, choices: job.choices,
            thumbnailsURL: links.thumbnails(job), music: job.music)
        erasedAt = job.erasedAt
    }
}
