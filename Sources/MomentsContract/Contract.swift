import Foundation
import MomentsModel

// The JSON of Moments' HTTP API (../shared/CLIENT-CONTRACT.md): the server encodes these types and
// MomentsKit decodes them, so the two cannot drift. Keys are snake_case; every key the contract
// names is always present (`null` when empty), hence the hand-written `encode(to:)`s (the
// synthesized ones leave nil out; the synthesized decoders already read a missing key or `null` as
// nil); dates are ISO-8601 in UTC without fractional seconds.

/// `GET /api/v1/jobs/{id}/status`; also the job in webhook bodies and Server-Sent Events.
public struct JobStatusReport: Codable, Equatable, Sendable {
    public var jobID: UUID
    public var status: JobStatus
    /// 0–100, never backwards within an attempt.
    public var progress: Int
    /// A sentence to show as it is.
    public var message: String?
    /// Set once completed: where to download the highlight.
    public var resultURL: String?
    public var createdAt: Date
    public var completedAt: Date?
    public var originalFilename: String?
    /// The source's length in seconds, once known.
    public var duration: Double?
    public var segmentsSelected: Int?

    public init(jobID: UUID, status: JobStatus, progress: Int, message: String?, resultURL: String?, createdAt: Date,
                completedAt: Date?, originalFilename: String?, duration: Double?, segmentsSelected: Int?) {
        self.jobID = jobID
        self.status = status
        self.progress = progress
        self.message = message
        self.resultURL = resultURL
        self.createdAt = createdAt
        self.completedAt = completedAt
        self.originalFilename = originalFilename
        self.duration = duration
        self.segmentsSelected = segmentsSelected
    }

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", status, progress, message, resultURL = "result_url", createdAt = "created_at"
        case completedAt = "completed_at", originalFilename = "original_filename", duration, segmentsSelected = "segments_selected"
    }

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

/// A part of the source that the highlight shows, in source seconds.
public struct SelectedSegment: Codable, Equatable, Sendable {
    public var start: Double
    public var end: Double
    /// 0–1: how good the part scored.
    public var score: Double

    public init(start: Double, end: Double, score: Double) {
        self.start = start
        self.end = end
        self.score = score
    }
}

/// `GET /api/v1/jobs/{id}`: the status fields and more.
public struct JobDetails: Codable, Equatable, Sendable {
    public var report: JobStatusReport
    public var stage: String?
    public var quality: Quality
    /// `auto` or `h264`; older servers leave it out (read as `auto`).
    public var codec: VideoCodecChoice
    public var targetDuration: Double
    public var errorCode: String?
    public var errorMessage: String?
    public var attempt: Int
    public var maxAttempts: Int
    public var startedAt: Date?
    public var updatedAt: Date
    public var sourceSize: Int64?
    public var resultSize: Int64?
    public var segments: [SelectedSegment]?

    public init(report: JobStatusReport, stage: String?, quality: Quality, targetDuration: Double, errorCode: String?,
                errorMessage: String?, attempt: Int, maxAttempts: Int, startedAt: Date?, updatedAt: Date,
                sourceSize: Int64?, resultSize: Int64?, segments: [SelectedSegment]?, codec: VideoCodecChoice = .auto) {
        self.report = report
        self.stage = stage
        self.quality = quality
        self.codec = codec
        self.targetDuration = targetDuration
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.sourceSize = sourceSize
        self.resultSize = resultSize
        self.segments = segments
    }

    enum CodingKeys: String, CodingKey {
        case stage, quality, codec, targetDuration = "target_duration", errorCode = "error_code", errorMessage = "error_message"
        case attempt, maxAttempts = "max_attempts", startedAt = "started_at", updatedAt = "updated_at"
        case sourceSize = "source_size", resultSize = "result_size", segments
    }

    public init(from decoder: any Decoder) throws {
        report = try JobStatusReport(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        stage = try c.decodeIfPresent(String.self, forKey: .stage)
        quality = try c.decode(Quality.self, forKey: .quality)
        codec = try c.decodeIfPresent(VideoCodecChoice.self, forKey: .codec) ?? .auto
        targetDuration = try c.decode(Double.self, forKey: .targetDuration)
        errorCode = try c.decodeIfPresent(String.self, forKey: .errorCode)
        errorMessage = try c.decodeIfPresent(String.self, forKey: .errorMessage)
        attempt = try c.decode(Int.self, forKey: .attempt)
        maxAttempts = try c.decode(Int.self, forKey: .maxAttempts)
        startedAt = try c.decodeIfPresent(Date.self, forKey: .startedAt)
        updatedAt = try c.decode(Date.self, forKey: .updatedAt)
        sourceSize = try c.decodeIfPresent(Int64.self, forKey: .sourceSize)
        resultSize = try c.decodeIfPresent(Int64.self, forKey: .resultSize)
        segments = try c.decodeIfPresent([SelectedSegment].self, forKey: .segments)
    }

    public func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(stage, forKey: .stage)
        try c.encode(quality, forKey: .quality)
        try c.encode(codec, forKey: .codec)
        try c.encode(targetDuration, forKey: .targetDuration)
        try c.encode(errorCode, forKey: .errorCode)
        try c.encode(errorMessage, forKey: .errorMessage)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(maxAttempts, forKey: .maxAttempts)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encode(sourceSize, forKey: .sourceSize)
        try c.encode(resultSize, forKey: .resultSize)
        try c.encode(segments, forKey: .segments)
    }
}

/// The answer to an accepted upload (`POST /api/v1/upload`, `POST /api/v1/jobs/{id}/start`).
public struct UploadAccepted: Codable, Equatable, Sendable {
    public var jobID: UUID
    public var message: String
    /// Seconds until the highlight is expected, when the server can tell.
    public var estimatedTime: Int?

    public init(jobID: UUID, message: String = "Video uploaded, processing started", estimatedTime: Int?) {
        self.jobID = jobID
        self.message = message
        self.estimatedTime = estimatedTime
    }

    enum CodingKeys: String, CodingKey { case jobID = "job_id", message, estimatedTime = "estimated_time" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(message, forKey: .message)
        try c.encode(estimatedTime, forKey: .estimatedTime)
    }
}

/// `GET /api/v1/upload/formats`: what can be uploaded.
public struct UploadFormats: Codable, Equatable, Sendable {
    public struct Range: Codable, Equatable, Sendable {
        public var min: Int
        public var max: Int
        public var `default`: Int

        public init(min: Int, max: Int, default value: Int) {
            self.min = min
            self.max = max
            self.default = value
        }
    }

    public var extensions: [String]
    public var containers: [String]
    public var maxSizeBytes: Int64
    public var maxDurationSeconds: Int
    public var targetDuration: Range
    public var qualities: [String]
    public var defaultQuality: String

    /// The `codec` choices (`auto`, `h264`) and the default; older servers leave them out.
    public var codecs: [String]?
    public var defaultCodec: String?

    public init(extensions: [String], containers: [String], maxSizeBytes: Int64, maxDurationSeconds: Int, targetDuration: Range,
                qualities: [String], defaultQuality: String, codecs: [String]? = nil, defaultCodec: String? = nil) {
        self.codecs = codecs
        self.defaultCodec = defaultCodec
        self.extensions = extensions
        self.containers = containers
        self.maxSizeBytes = maxSizeBytes
        self.maxDurationSeconds = maxDurationSeconds
        self.targetDuration = targetDuration
        self.qualities = qualities
        self.defaultQuality = defaultQuality
    }

    enum CodingKeys: String, CodingKey {
        case extensions, containers, maxSizeBytes = "max_size_bytes", maxDurationSeconds = "max_duration_seconds"
        case targetDuration = "target_duration", qualities, defaultQuality = "default_quality"
        case codecs, defaultCodec = "default_codec"
    }
}

/// `POST /api/v1/devices`: the body (optional) and the answer, which holds the only copy of the token.
public struct DeviceRegistrationRequest: Codable, Equatable, Sendable {
    public var name: String?

    public init(name: String?) { self.name = name }
}

public struct DeviceRegistration: Codable, Equatable, Sendable {
    public var deviceID: UUID
    /// `mdt_…`: send as `Authorization: Bearer <token>`. Shown once; keep it in the keychain.
    public var token: String
    public var plan: Plan
    public var createdAt: Date

    public init(deviceID: UUID, token: String, plan: Plan, createdAt: Date) {
        self.deviceID = deviceID
        self.token = token
        self.plan = plan
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey { case deviceID = "device_id", token, plan, createdAt = "created_at" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID.uuidString.lowercased(), forKey: .deviceID)
        try c.encode(token, forKey: .token)
        try c.encode(plan, forKey: .plan)
        try c.encode(createdAt, forKey: .createdAt)
    }
}

/// `GET /api/v1/me`: the device's plan and this month's usage.
public struct Account: Codable, Equatable, Sendable {
    public struct Usage: Codable, Equatable, Sendable {
        /// Highlights made this calendar month (UTC); failed and cancelled jobs do not count.
        public var used: Int
        /// The month's allowance; nil when unlimited.
        public var limit: Int?
        public var remaining: Int?
        public var periodStart: Date
        public var resetsAt: Date

        public init(used: Int, limit: Int?, remaining: Int?, periodStart: Date, resetsAt: Date) {
            self.used = used
            self.limit = limit
            self.remaining = remaining
            self.periodStart = periodStart
            self.resetsAt = resetsAt
        }

        enum CodingKeys: String, CodingKey { case used, limit, remaining, periodStart = "period_start", resetsAt = "resets_at" }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(used, forKey: .used)
            try c.encode(limit, forKey: .limit)
            try c.encode(remaining, forKey: .remaining)
            try c.encode(periodStart, forKey: .periodStart)
            try c.encode(resetsAt, forKey: .resetsAt)
        }
    }

    public var deviceID: UUID
    public var name: String?
    public var plan: Plan
    /// What the app shows: "Free: 3 videos/month" or "Pro: Unlimited".
    public var planDescription: String
    public var usage: Usage
    public var createdAt: Date

    public init(deviceID: UUID, name: String?, plan: Plan, planDescription: String, usage: Usage, createdAt: Date) {
        self.deviceID = deviceID
        self.name = name
        self.plan = plan
        self.planDescription = planDescription
        self.usage = usage
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", name, plan, planDescription = "plan_description", usage, createdAt = "created_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID.uuidString.lowercased(), forKey: .deviceID)
        try c.encode(name, forKey: .name)
        try c.encode(plan, forKey: .plan)
        try c.encode(planDescription, forKey: .planDescription)
        try c.encode(usage, forKey: .usage)
        try c.encode(createdAt, forKey: .createdAt)
    }
}

/// `POST /api/v1/uploads`: a direct upload to storage for big files. The body and the answer.
public struct DirectUploadRequest: Codable, Equatable, Sendable {
    public var filename: String?
    public var targetDuration: Int?
    public var quality: String?
    public var codec: String?
    public var callbackURL: String?

    public init(filename: String?, targetDuration: Int?, quality: String?, callbackURL: String? = nil, codec: String? = nil) {
        self.filename = filename
        self.targetDuration = targetDuration
        self.quality = quality
        self.codec = codec
        self.callbackURL = callbackURL
    }

    enum CodingKeys: String, CodingKey { case filename, targetDuration = "target_duration", quality, codec, callbackURL = "callback_url" }
}

public struct DirectUpload: Codable, Equatable, Sendable {
    public var jobID: UUID
    /// PUT the bytes here before `expiresAt`, then `POST /api/v1/jobs/{id}/start`.
    public var uploadURL: String
    public var method: String
    public var expiresAt: Date
    public var maxSizeBytes: Int64

    public init(jobID: UUID, uploadURL: String, method: String = "PUT", expiresAt: Date, maxSizeBytes: Int64) {
        self.jobID = jobID
        self.uploadURL = uploadURL
        self.method = method
        self.expiresAt = expiresAt
        self.maxSizeBytes = maxSizeBytes
    }

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", uploadURL = "upload_url", method, expiresAt = "expires_at", maxSizeBytes = "max_size_bytes"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(uploadURL, forKey: .uploadURL)
        try c.encode(method, forKey: .method)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(maxSizeBytes, forKey: .maxSizeBytes)
    }
}

/// Every error answer: `{"error": {"code": "...", "message": "..."}}`.
public struct ErrorReply: Codable, Equatable, Sendable {
    public struct Detail: Codable, Equatable, Sendable {
        /// Stable, for code to branch on (`quota_exceeded`, `not_a_video`, …).
        public var code: String
        /// A sentence to show as it is.
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var error: Detail

    public init(code: String, message: String) { error = Detail(code: code, message: message) }
}

/// The encoder and decoder of the contract's JSON.
public enum MomentsJSON {
    /// ISO-8601 in UTC without fractional seconds (`2026-11-21T10:15:03Z`), what the app's
    /// `JSONDecoder.DateDecodingStrategy.iso8601` accepts; keys sorted for stable output.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Reads the contract's dates as the iOS app does (ISO-8601, no fractions).
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// `2026-11-21T10:15:03Z`: whole seconds, rounded down.
    public static func format(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }
}
