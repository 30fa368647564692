import Foundation
import MomentsModel

/// `GET /api/v1/jobs/{id}/status`, exactly as the app decodes it (CLIENT-CONTRACT.md); also the job
/// in webhook bodies.
public struct JobStatusJSON: Codable, Equatable, Sendable {
    public var jobID: UUID
    public var status: JobStatus
    public var progress: Int
    public var message: String?
    public var resultURL: String?
    public var createdAt: Date
    public var completedAt: Date?
    public var originalFilename: String?
    public var duration: Double?
    public var segmentsSelected: Int?

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", status, progress, message, resultURL = "result_url", createdAt = "created_at"
        case completedAt = "completed_at", originalFilename = "original_filename", duration, segmentsSelected = "segments_selected"
    }

    public init(_ job: JobRecord, resultURL: String?) {
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
    public func encode(to encoder: any Encoder) throws {
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
public struct JobDetailsJSON: Encodable, Sendable {
    public var status: JobStatusJSON
    public var job: JobRecord

    public init(status: JobStatusJSON, job: JobRecord) {
        self.status = status
        self.job = job
    }

    enum CodingKeys: String, CodingKey {
        case stage, quality, targetDuration = "target_duration", errorCode = "error_code", errorMessage = "error_message"
        case attempt, maxAttempts = "max_attempts", startedAt = "started_at", updatedAt = "updated_at"
        case sourceSize = "source_size", resultSize = "result_size", segments
    }

    public func encode(to encoder: any Encoder) throws {
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

/// The JSON every client gets (the API's replies, webhook bodies).
public enum ClientJSON {
    /// ISO-8601 in UTC without fractional seconds (`2026-11-21T10:15:03Z`): what the app's decoder accepts.
    public static let encoder: JSONEncoder = {
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
