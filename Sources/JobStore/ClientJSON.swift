import Foundation
import MomentsContract

// A job row as clients see it: the contract's types (MomentsContract, shared with MomentsKit) made
// from `JobRecord`.

extension JobStatusReport {
    /// The status of `job`; `resultURL` only once it completed.
    public init(_ job: JobRecord, resultURL: String?) {
        self.init(jobID: job.id, status: job.status, progress: job.progress, message: job.message,
                  resultURL: job.status == .completed ? resultURL : nil, createdAt: job.createdAt, completedAt: job.completedAt,
                  originalFilename: job.originalFilename, duration: job.sourceDuration, segmentsSelected: job.segmentsSelected)
    }
}

extension JobDetails {
    public init(_ job: JobRecord, resultURL: String?) {
        self.init(report: JobStatusReport(job, resultURL: resultURL), stage: job.stage, quality: job.quality,
                  targetDuration: job.targetDuration, errorCode: job.errorCode, errorMessage: job.errorMessage, attempt: job.attempt,
                  maxAttempts: job.maxAttempts, startedAt: job.startedAt, updatedAt: job.updatedAt, sourceSize: job.sourceSize,
                  resultSize: job.resultSize, segments: job.segments, codec: job.codec)
    }
}
