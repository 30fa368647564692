import Foundation
import MomentsModel

/// What the API knows when it creates a job.
public struct NewJob: Sendable {
    public var id: UUID
    public var owner: String?
    public var originalFilename: String?
    public var sourceKey: String
    public var sourceSize: Int64?
    /// The source's length (seconds) as the API's probe found it: the attempt's deadline follows
    /// from it, and the status shows it while the job waits.
    public var sourceDuration: Double?
    public var targetDuration: Double
    public var quality: Quality
    public var codec: VideoCodecChoice
    public var maxAttempts: Int
    /// Gets a signed POST when the job ends.
    public var callbackURL: String?
    /// The trace the job continues (propagation headers: W3C `traceparent`, `tracestate`); nil
    /// when tracing is off. `Jobs.submit` fills it from the submitting task's span.
    public var traceContext: [String: String]?
    /// The user's segment and framing choices.
    public var choices: HighlightChoices
    /// The soundtrack asked for; nil: the video's own sound.
    public var music: MusicChoice?
    /// The app's own strings (`JobMetadata`); nil when none were sent.
    public var metadata: [String: String]?

    public init(
        id: UUID = UUID(), owner: String? = nil, originalFilename: String? = nil, sourceKey: String,
        sourceSize: Int64? = nil, sourceDuration: Double? = nil, targetDuration: Double = Double(HighlightLimits.defaultTargetDuration),
        quality: Quality = .high, codec: VideoCodecChoice = .auto,
        maxAttempts: Int = 3, callbackURL: String? = nil, traceContext: [String: String]? = nil,
        choices: HighlightChoices = HighlightChoices(), music: MusicChoice? = nil, metadata: [String: String]? = nil
    ) {
        self.id = id
        self.owner = owner
        self.originalFilename = originalFilename
        self.sourceKey = sourceKey
        self.sourceSize = sourceSize
        self.sourceDuration = sourceDuration
        self.targetDuration = targetDuration
        self.quality = quality
        self.codec = codec
        self.maxAttempts = maxAttempts
        self.callbackURL = callbackURL
        self.traceContext = traceContext
        self.choices = choices
        self.music = music
        self.metadata = metadata
    }
}

/// What a worker found the source to be: what timeline exports need to name its frames.
public struct SourceMedia: Sendable, Equatable, Codable {
    public var frameRate: Double
    /// The camera's timecode at the first frame, if it recorded one.
    public var startTimecode: String?
    public var hasAudio: Bool
    /// The picture as displayed (rotation applied).
    public var width: Int
    public var height: Int

    public init(frameRate: Double, startTimecode: String?, hasAudio: Bool, width: Int, height: Int) {
        self.frameRate = frameRate
        self.startTimecode = startTimecode
        self.hasAudio = hasAudio
        self.width = width
        self.height = height
    }

    enum CodingKeys: String, CodingKey {
        case frameRate = "frame_rate", startTimecode = "start_timecode", hasAudio = "has_audio", width, height
    }
}

/// One row of `jobs`.
public struct JobRecord: Sendable, Equatable {
    public var id: UUID
    public var owner: String?
    public var status: JobStatus
    public var progress: Int
    public var stage: String?
    public var message: String?
    public var errorCode: String?
    public var errorMessage: String?
    public var originalFilename: String?
    public var sourceKey: String
    public var sourceSize: Int64?
    public var resultKey: String?
    public var resultSize: Int64?
    public var targetDuration: Double
    public var quality: Quality
    public var codec: VideoCodecChoice = .auto
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var attempt: Int
    public var maxAttempts: Int
    public var runAfter: Date
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    public var createdAt: Date
    public var startedAt: Date?
    public var completedAt: Date?
    public var updatedAt: Date
    /// The parts of the source the highlight shows, once completed.
    public var segments: [ResultSegment]?
    public var callbackURL: String?
    /// When the source was deleted from storage (after success, or by the retention sweep).
    public var sourceDeletedAt: Date?
    /// When the retention sweep deleted the highlight and the source; the download answers 410 after.
    public var resultExpiredAt: Date?
    /// The trace the job belongs to (propagation headers), when it was submitted with tracing on.
    public var traceContext: [String: String]? = nil
    /// The user's segment and framing choices.
    public var choices = HighlightChoices()
    /// The poster JPEG and the thumbnail strip, once completed.
    public var posterKey: String? = nil
    public var thumbnailsKey: String? = nil
    /// What the source is (frame rate, timecode, sound, size), once a worker analysed it.
    public var sourceMedia: SourceMedia? = nil
    /// The soundtrack asked for; nil: the video's own sound.
    public var music: MusicChoice? = nil
    /// The app's own strings (`JobMetadata`); nil when none were sent.
    public var metadata: [String: String]? = nil
    /// When its owner erased it: its files are gone (or going) and downloads answer 410 `erased`.
    public var erasedAt: Date? = nil

    /// The objects the job still has in storage: its highlight, poster and thumbnails until they
    /// expired, its source until it was deleted, and an uploaded track.
    public var storedObjectKeys: [String] {
        var keys = resultExpiredAt == nil ? [resultKey, posterKey, thumbnailsKey].compactMap { $0 } : []
        if sourceDeletedAt == nil { keys.append(sourceKey) }
        if let key = music?.uploadedKey { keys.append(key) }
        return keys
    }

    /// The trace id (32 hex digits) of `traceContext`'s W3C `traceparent`, for people to look up.
    public var traceID: String? { traceContext?["traceparent"].flatMap(Self.traceID(of:)) }

    /// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<flags>`); nil when malformed.
    public static func traceID(of traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit) else { return nil }
        return String(parts[1])
    }
}

/// One row of `job_events`: a status change.
public struct JobEvent: Sendable, Equatable {
    public var at: Date
    public var from: JobStatus?
    public var to: JobStatus
    public var attempt: Int
    public var worker: String?
    public var detail: String?
    /// How a failed attempt's engine process ended, for operators (see `job_events.diagnostics`).
    public var diagnostics: String? = nil
}

/// The answer to `create(_:monthlyLimit:)`.
public enum CreateOutcome: Sendable, Equatable {
    case created(JobRecord)
    /// The owner has `used` highlights this month, the plan's `limit`: nothing was written.
    case quotaExceeded(used: Int, limit: Int)
}
