import Foundation
import MomentsModel

/// The answer to an accepted upload (`POST /api/v1/upload`, `POST /api/v1/jobs/{id}/start`).
public struct UploadAccepted: Codable, Equatable, Sendable {
    public var jobID: UUID
    public var message: String
    /// Seconds until the highlight is expected, when the server can tell.
    public var estimatedTime: Int?
    /// The highlight's likely size in bytes, when the server can tell (1.2): close for a copied
    /// highlight (`quality=original` of phone footage), a guide for an encoded one.
    public var estimatedSize: Int64?

    public init(jobID: UUID, message: String = "Video uploaded, processing started", estimatedTime: Int?, estimatedSize: Int64? = nil) {
        self.jobID = jobID
        self.message = message
        self.estimatedTime = estimatedTime
        self.estimatedSize = estimatedSize
    }

    enum CodingKeys: String, CodingKey { case jobID = "job_id", message, estimatedTime = "estimated_time", estimatedSize = "estimated_size" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(message, forKey: .message)
        try c.encode(estimatedTime, forKey: .estimatedTime)
        try c.encode(estimatedSize, forKey: .estimatedSize)
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

    public init(
        extensions: [String], containers: [String], maxSizeBytes: Int64, maxDurationSeconds: Int, targetDuration: Range,
        qualities: [String], defaultQuality: String, codecs: [String]? = nil, defaultCodec: String? = nil
    ) {
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
    /// API 1.2: `30` (the default) or `source`.
    public var fps: String?
    /// API 1.1: a resumable upload (S3 multipart): parts PUT one by one, any order, resumable.
    public var resumable: Bool?
    /// API 1.2: a library track under the highlight, and how it sits with the video's sound.
    public var musicID: UUID?
    public var musicVolume: Double?
    public var keepSourceAudio: Bool?
    /// API 1.2: or a track of the app's own, PUT to the answer's `music_upload_url`: its name and
    /// length (the URL accepts exactly that many bytes).
    public var musicFilename: String?
    public var musicSizeBytes: Int64?
    /// API 1.2: the app's own strings (`JobMetadata`), returned wherever the job is shown.
    public var metadata: [String: String]?

    public init(
        filename: String?, targetDuration: Int?, quality: String?, callbackURL: String? = nil, codec: String? = nil,
        sizeBytes: Int64? = nil, choices: HighlightChoices = HighlightChoices(), resumable: Bool? = nil, music: MusicChoice? = nil,
        musicSizeBytes: Int64? = nil, metadata: [String: String]? = nil
    ) {
        self.filename = filename
        self.metadata = metadata
        musicID = music?.trackID
        musicFilename = music?.filename
        self.musicSizeBytes = music?.filename == nil ? nil : musicSizeBytes
        musicVolume = music?.volume
        keepSourceAudio = music?.keepSourceAudio
        self.targetDuration = targetDuration
        self.quality = quality
        self.codec = codec
        self.callbackURL = callbackURL
        self.sizeBytes = sizeBytes
        minSegment = choices.minSegment
        maxSegment = choices.maxSegment
        maxSegments = choices.maxSegments
        aspect = choices.aspect == .source ? nil : choices.aspect.rawValue
        fps = choices.fps == .upTo30 ? nil : choices.fps.rawValue
        self.resumable = resumable
    }

    enum CodingKeys: String, CodingKey {
        case filename, targetDuration = "target_duration", quality, codec, callbackURL = "callback_url", sizeBytes = "size_bytes"
        case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect, fps, resumable
        case musicID = "music_id", musicVolume = "music_volume", keepSourceAudio = "keep_source_audio"
        case musicFilename = "music_filename", musicSizeBytes = "music_size_bytes", metadata
    }
}

public struct DirectUpload: Codable, Equatable, Sendable {
    public var jobID: UUID
    /// PUT the bytes here before `expiresAt`, then `POST /api/v1/jobs/{id}/start`.
    public var uploadURL: String
    public var method: String
    public var expiresAt: Date
    public var maxSizeBytes: Int64
    /// API 1.1, resumable uploads only: the parts (`uploadURL` is the first one's URL).
    public var resumable: UploadParts?
    /// API 1.2, when the request named a track of the app's own (`music_filename`): PUT it here, in
    /// one request of exactly `music_size_bytes`, before starting the job.
    public var musicUploadURL: String?

    public init(
        jobID: UUID, uploadURL: String, method: String = "PUT", expiresAt: Date, maxSizeBytes: Int64, resumable: UploadParts? = nil,
        musicUploadURL: String? = nil
    ) {
        self.musicUploadURL = musicUploadURL
        self.jobID = jobID
        self.uploadURL = uploadURL
        self.method = method
        self.expiresAt = expiresAt
        self.maxSizeBytes = maxSizeBytes
        self.resumable = resumable
    }

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", uploadURL = "upload_url", method, expiresAt = "expires_at", maxSizeBytes = "max_size_bytes", parts
        case musicUploadURL = "music_upload_url"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        jobID = try c.decode(UUID.self, forKey: .jobID)
        uploadURL = try c.decode(String.self, forKey: .uploadURL)
        method = try c.decode(String.self, forKey: .method)
        expiresAt = try c.decode(Date.self, forKey: .expiresAt)
        maxSizeBytes = try c.decode(Int64.self, forKey: .maxSizeBytes)
        resumable = c.contains(.parts) ? try UploadParts(from: decoder) : nil
        musicUploadURL = try c.decodeIfPresent(String.self, forKey: .musicUploadURL)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(uploadURL, forKey: .uploadURL)
        try c.encode(method, forKey: .method)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(maxSizeBytes, forKey: .maxSizeBytes)
        try c.encodeIfPresent(musicUploadURL, forKey: .musicUploadURL)
        try resumable?.encode(to: encoder)
    }
}

/// A resumable upload's parts (`POST /api/v1/uploads` with `resumable`, `GET /api/v1/uploads/{id}/parts`):
/// which have arrived, and signed PUT URLs for those that have not.
public struct UploadParts: Codable, Equatable, Sendable {
    public struct Part: Codable, Equatable, Sendable {
        /// 1-based.
        public var partNumber: Int
        /// Offset of the part in the file: `(partNumber - 1) * partSize`.
        public var offset: Int64
        /// Exactly this many bytes (the URL refuses any other length).
        public var sizeBytes: Int64
        public var received: Bool
        /// PUT the part's bytes here; nil once received. Valid until `urlsExpireAt`.
        public var url: String?

        public init(partNumber: Int, offset: Int64, sizeBytes: Int64, received: Bool, url: String?) {
            self.partNumber = partNumber
            self.offset = offset
            self.sizeBytes = sizeBytes
            self.received = received
            self.url = url
        }

        enum CodingKeys: String, CodingKey { case partNumber = "part_number", offset, sizeBytes = "size_bytes", received, url }
    }

    public var jobID: UUID
    public var sizeBytes: Int64
    /// Every part but the last has exactly this many bytes (R2's rule for multipart uploads).
    public var partSize: Int64
    public var partCount: Int
    public var parts: [Part]
    /// When the part URLs expire: ask `GET /api/v1/uploads/{id}/parts` for fresh ones.
    public var urlsExpireAt: Date
    /// When the upload itself is given up (its parts deleted) if not started.
    public var uploadExpiresAt: Date
    /// API 1.2, from `GET /api/v1/uploads/{id}/parts` while a track of the app's own
    /// (`music_filename`) has not arrived: a fresh URL to PUT it to.
    public var musicUploadURL: String?

    public init(jobID: UUID, sizeBytes: Int64, partSize: Int64, partCount: Int, parts: [Part], urlsExpireAt: Date, uploadExpiresAt: Date) {
        self.jobID = jobID
        self.sizeBytes = sizeBytes
        self.partSize = partSize
        self.partCount = partCount
        self.parts = parts
        self.urlsExpireAt = urlsExpireAt
        self.uploadExpiresAt = uploadExpiresAt
    }

    /// The parts still to send.
    public var missing: [Part] { parts.filter { !$0.received } }

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", sizeBytes = "size_bytes", partSize = "part_size", partCount = "part_count", parts
        case urlsExpireAt = "urls_expire_at", uploadExpiresAt = "upload_expires_at", musicUploadURL = "music_upload_url"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID.uuidString.lowercased(), forKey: .jobID)
        try c.encode(sizeBytes, forKey: .sizeBytes)
        try c.encode(partSize, forKey: .partSize)
        try c.encode(partCount, forKey: .partCount)
        try c.encode(parts, forKey: .parts)
        try c.encode(urlsExpireAt, forKey: .urlsExpireAt)
        try c.encode(uploadExpiresAt, forKey: .uploadExpiresAt)
        try c.encodeIfPresent(musicUploadURL, forKey: .musicUploadURL)
    }
}
