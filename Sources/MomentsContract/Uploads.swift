import Foundation
import MomentsModel

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

/// `POST /api/v1/uploads`: a direct upload to storage for big files. The body and the answer.
public struct DirectUploadRequest: Codable, Equatable, Sendable {
    public var filename: String?
    public var targetDuration: Int?
    public var quality: String?
    public var codec: String?
    public var callbackURL: String?
    /// The file's length: the upload URL then accepts exactly that many bytes.
    public var sizeBytes: Int64?
    /// API 1.1: segment lengths and count, and the frame's shape.
    public var minSegment: Double?
    public var maxSegment: Double?
    public var maxSegments: Int?
    public var aspect: String?

    public init(filename: String?, targetDuration: Int?, quality: String?, callbackURL: String? = nil, codec: String? = nil,
                sizeBytes: Int64? = nil, choices: HighlightChoices = HighlightChoices()) {
        self.filename = filename
        self.targetDuration = targetDuration
        self.quality = quality
        self.codec = codec
        self.callbackURL = callbackURL
        self.sizeBytes = sizeBytes
        minSegment = choices.minSegment
        maxSegment = choices.maxSegment
        maxSegments = choices.maxSegments
        aspect = choices.aspect == .source ? nil : choices.aspect.rawValue
    }

    enum CodingKeys: String, CodingKey {
        case filename, targetDuration = "target_duration", quality, codec, callbackURL = "callback_url", sizeBytes = "size_bytes"
        case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect
    }
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
