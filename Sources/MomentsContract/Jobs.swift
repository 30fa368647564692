import Foundation
import MomentsModel

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
    /// Set once completed (API 1.1): the highlight's poster JPEG. Left out until then.
    public var posterURL: String?
    /// API 1.2: the app's own strings sent with the upload (`JobMetadata`). Left out when none were.
    public var metadata: [String: String]?

    public init(
        jobID: UUID, status: JobStatus, progress: Int, message: String?, resultURL: String?, createdAt: Date,
        completedAt: Date?, originalFilename: String?, duration: Double?, segmentsSelected: Int?, posterURL: String? = nil,
        metadata: [String: String]? = nil
    ) {
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
        self.posterURL = posterURL
        self.metadata = metadata
    }

    enum CodingKeys: String, CodingKey {
        case jobID = "job_id", status, progress, message, resultURL = "result_url", createdAt = "created_at"
        case completedAt = "completed_at", originalFilename = "original_filename", duration, segmentsSelected = "segments_selected"
        case posterURL = "poster_url", metadata
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
        // New in 1.1 and only when there is one, so the seed's answers stay byte for byte.
        try c.encodeIfPresent(posterURL, forKey: .posterURL)
        try c.encodeIfPresent(metadata, forKey: .metadata)
    }
}

/// `GET /api/v1/jobs`: a page of the device's jobs, newest first, each as `/status` shows it.
public struct JobList: Codable, Equatable, Sendable {
    public var jobs: [JobStatusReport]
    /// Pass as `cursor` for the next page; null on the last one.
    public var nextCursor: String?

    public init(jobs: [JobStatusReport], nextCursor: String?) {
        self.jobs = jobs
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey { case jobs, nextCursor = "next_cursor" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobs, forKey: .jobs)
        try c.encode(nextCursor, forKey: .nextCursor)
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
    /// API 1.1: the user's segment and framing choices (each left out when not made).
    public var choices: HighlightChoices
    /// API 1.1: once completed, the thumbnail strip (one picture per segment, left to right).
    public var thumbnailsURL: String?
    /// API 1.2: the soundtrack asked for (`music_id`, `music_volume`, `keep_source_audio`; left out without one).
    public var music: MusicChoice?
    /// API 1.2, once completed and in the API's own answer: links that work without the token
    /// until they expire, for `AVPlayer(url:)` and image views. Left out otherwise.
    public var playback: PlaybackURLs?
    /// API 1.2: when its owner erased it (`DELETE /api/v1/jobs/{id}/files`, `/api/v1/devices/me`);
    /// its files are gone and downloads answer 410 `erased`. Left out otherwise.
    public var erasedAt: Date?

    public init(
        report: JobStatusReport, stage: String?, quality: Quality, targetDuration: Double, errorCode: String?,
        errorMessage: String?, attempt: Int, maxAttempts: Int, startedAt: Date?, updatedAt: Date,
        sourceSize: Int64?, resultSize: Int64?, segments: [SelectedSegment]?, codec: VideoCodecChoice = .auto,
        choices: HighlightChoices = HighlightChoices(), thumbnailsURL: String? = nil, music: MusicChoice? = nil
    ) {
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
        self.choices = choices
        self.thumbnailsURL = thumbnailsURL
        self.music = music
    }

    enum CodingKeys: String, CodingKey {
        case stage, quality, codec, targetDuration = "target_duration", errorCode = "error_code", errorMessage = "error_message"
        case attempt, maxAttempts = "max_attempts", startedAt = "started_at", updatedAt = "updated_at"
        case sourceSize = "source_size", resultSize = "result_size", segments
        case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect, fps
        case thumbnailsURL = "thumbnails_url"
        case musicID = "music_id", musicFilename = "music_filename", musicVolume = "music_volume", keepSourceAudio = "keep_source_audio"
        case playbackURL = "playback_url", playbackPosterURL = "playback_poster_url"
        case playbackThumbnailsURL = "playback_thumbnails_url", playbackExpiresAt = "playback_expires_at"
        case erasedAt = "erased_at"
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
        choices = HighlightChoices(
            minSegment: try c.decodeIfPresent(Double.self, forKey: .minSegment),
            maxSegment: try c.decodeIfPresent(Double.self, forKey: .maxSegment),
            maxSegments: try c.decodeIfPresent(Int.self, forKey: .maxSegments),
            aspect: try c.decodeIfPresent(AspectRatio.self, forKey: .aspect) ?? .source,
            fps: try c.decodeIfPresent(FrameRateChoice.self, forKey: .fps) ?? .upTo30)
        thumbnailsURL = try c.decodeIfPresent(String.self, forKey: .thumbnailsURL)
        let volume = try c.decodeIfPresent(Double.self, forKey: .musicVolume) ?? MusicChoice.defaultVolume
        let keep = try c.decodeIfPresent(Bool.self, forKey: .keepSourceAudio) ?? true
        if let id = try c.decodeIfPresent(UUID.self, forKey: .musicID) {
            music = MusicChoice(trackID: id, volume: volume, keepSourceAudio: keep)
        } else if let name = try c.decodeIfPresent(String.self, forKey: .musicFilename) {
            music = MusicChoice(uploaded: name, volume: volume, keepSourceAudio: keep)
        }
        if let url = try c.decodeIfPresent(String.self, forKey: .playbackURL) {
            playback = PlaybackURLs(
                playbackURL: url, posterURL: try c.decodeIfPresent(String.self, forKey: .playbackPosterURL),
                thumbnailsURL: try c.decodeIfPresent(String.self, forKey: .playbackThumbnailsURL),
                expiresAt: try c.decode(Date.self, forKey: .playbackExpiresAt))
        }
        erasedAt = try c.decodeIfPresent(Date.self, forKey: .erasedAt)
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
        // New in 1.1, each only when set, so the seed's answers stay byte for byte.
        try c.encodeIfPresent(choices.minSegment, forKey: .minSegment)
        try c.encodeIfPresent(choices.maxSegment, forKey: .maxSegment)
        try c.encodeIfPresent(choices.maxSegments, forKey: .maxSegments)
        if choices.aspect != .source { try c.encode(choices.aspect, forKey: .aspect) }
        // 1.2: only when the source's own rate was asked for.
        if choices.fps != .upTo30 { try c.encode(choices.fps, forKey: .fps) }
        try c.encodeIfPresent(thumbnailsURL, forKey: .thumbnailsURL)
        // 1.2: only with music.
        if let music {
            try c.encodeIfPresent(music.trackID?.uuidString.lowercased(), forKey: .musicID)
            try c.encodeIfPresent(music.trackID == nil ? music.filename : nil, forKey: .musicFilename)
            try c.encode(music.volume, forKey: .musicVolume)
            try c.encode(music.keepSourceAudio, forKey: .keepSourceAudio)
        }
        // 1.2: only in the API's answer for a completed job.
        if let playback {
            try c.encode(playback.playbackURL, forKey: .playbackURL)
            try c.encodeIfPresent(playback.posterURL, forKey: .playbackPosterURL)
            try c.encodeIfPresent(playback.thumbnailsURL, forKey: .playbackThumbnailsURL)
            try c.encode(playback.expiresAt, forKey: .playbackExpiresAt)
        }
        try c.encodeIfPresent(erasedAt, forKey: .erasedAt)
    }
}

/// A completed highlight's files at URLs that need no token until `expiresAt` (API 1.2): presigned
/// storage URLs, or URLs the API signed. Both serve byte ranges, as AVPlayer reads.
public struct PlaybackURLs: Codable, Equatable, Sendable {
    /// The highlight (MP4).
    public var playbackURL: String
    /// The poster and the thumbnail strip (JPEG), when the highlight has them.
    public var posterURL: String?
    public var thumbnailsURL: String?
    public var expiresAt: Date

    public init(playbackURL: String, posterURL: String?, thumbnailsURL: String?, expiresAt: Date) {
        self.playbackURL = playbackURL
        self.posterURL = posterURL
        self.thumbnailsURL = thumbnailsURL
        self.expiresAt = expiresAt
    }
}
