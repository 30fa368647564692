import Foundation
import JobStore
import MomentsModel

/// `GET /api/v1/jobs/{id}/status`, exactly as the app decodes it (CLIENT-CONTRACT.md).
struct JobStatusJSON: Codable, Equatable {
    var jobID: UUID
    var status: JobStatus
    var progress: Int
    var message: String?
    var resultURL: String?
    var createdAt: Date
    var completedAt: Date?
    var originalFilename: String?
    var duration: Double?
    var segmentsSelected: Int?

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", status, progress, message, resultURL = "result_url", createdAt = "created_at"
        case completedAt = "completed_at", originalFilename = "original_filename", duration, segmentsSelected = "segments_selected"
    }

    init(_ job: JobRecord, resultURL: String?) {
        jobID = job.id
        status = job.status
        progress = job.progress
        message = job.message
        self.resultURL = job.status == .completed ? resultURL : nil
        createdAt = job.createdAt
        completedAt = job.completedAt
        originalFilename = job.originalFilename
        duration = job.sourceDuration
        segmentsSelected = job.segmentsSelected
    }

    /// Keys always present, `null` when empty: the app's decoder wants every field it knows.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(status, forKey: .status)
        try c.encode(progress, forKey: .progress)
        try c.encode(message, forKey: .message)
        try c.encode(resultURL, forKey: .resultURL)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(completedAt, forKey: .completedAt)
        try c.encode(originalFilename, forKey: .originalFilename)
        try c.encode(duration, forKey: .duration)
        try c.encode(segmentsSelected, forKey: .segmentsSelected)
    }
}

/// `GET /api/v1/jobs/{id}`: the status fields and the rest of the row that is useful to a client.
struct JobDetailsJSON: Encodable {
    var status: JobStatusJSON
    var job: JobRecord

    enum CodingKeys: String, CodingKey {
        case stage, quality, targetDuration = "target_duration", errorCode = "error_code", errorMessage = "error_message"
        case attempt, maxAttempts = "max_attempts", startedAt = "started_at", updatedAt = "updated_at"
        case sourceSize = "source_size", resultSize = "result_size", segments
    }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(job.stage, forKey: .stage)
        try c.encode(job.quality, forKey: .quality)
        try c.encode(job.targetDuration, forKey: .targetDuration)
        try c.encode(job.errorCode, forKey: .errorCode)
        try c.encode(job.errorMessage, forKey: .errorMessage)
        try c.encode(job.attempt, forKey: .attempt)
        try c.encode(job.maxAttempts, forKey: .maxAttempts)
        try c.encode(job.startedAt, forKey: .startedAt)
        try c.encode(job.updatedAt, forKey: .updatedAt)
        try c.encode(job.sourceSize, forKey: .sourceSize)
        try c.encode(job.resultSize, forKey: .resultSize)
        try c.encode(job.segments, forKey: .segments)
    }
}

enum APIJSON {
    /// ISO-8601 in UTC without fractional seconds (`2026-11-21T10:15:03Z`): what the app's decoder accepts.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            let seconds = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
            try c.encode(seconds.formatted(.iso8601))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
