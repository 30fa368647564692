/// Stable machine-readable error codes. Clients and operators match on `rawValue`; never rename one.
public enum ErrorCode: String, Sendable, Codable, CaseIterable {
    // Media the engine cannot use (permanent: retrying cannot help).
    case notAVideo = "not_a_video"
    case noVideoStream = "no_video_stream"
    case unsupportedCodec = "unsupported_codec"
    case corruptMedia = "corrupt_media"
    case tooShort = "too_short"
    case tooLong = "too_long"
    case resolutionTooLarge = "resolution_too_large"
    /// A music track that is not sound alone (text, an image, a video).
    case notAudio = "not_audio"
    // The machine or the request.
    case ioError = "io_error"
    case invalidArgument = "invalid_argument"
    case cancelled = "cancelled"
    case internalError = "internal_error"
    // The job system.
    /// Every attempt failed with a retryable error (or its worker vanished); the job is dead-lettered.
    case exhaustedRetries = "exhausted_retries"
    /// Object storage could not be reached or refused the request.
    case storageError = "storage_error"
    /// The uploaded source is no longer in storage (deleted or expired): uploading again is the only fix.
    case sourceMissing = "source_missing"
    /// The stored source is longer than the file that was accepted: it is not the same file.
    case sourceChanged = "source_changed"
    /// An attempt reported no progress for `WORKER_STALL_SECONDS` and was stopped.
    case attemptStalled = "attempt_stalled"
    /// An attempt ran past its deadline (a multiple of the time it expected) and was stopped.
    case attemptTimeout = "attempt_timeout"
    /// The attempt's engine process died of a signal (a crash in the engine or a library under it).
    case engineCrashed = "engine_crashed"
    /// The attempt's engine process passed its memory limit (`WORKER_ATTEMPT_MEMORY_MB`).
    case outOfMemory = "out_of_memory"
    /// The music library track a job asked for was removed before the job ran.
    case musicUnavailable = "music_unavailable"

    /// Whether the same input can never succeed, so a job should fail at once instead of retrying.
    public var isPermanent: Bool {
        switch self {
        case .notAVideo, .noVideoStream, .unsupportedCodec, .corruptMedia, .tooShort, .tooLong,
            .resolutionTooLarge, .notAudio, .invalidArgument, .sourceMissing, .sourceChanged, .musicUnavailable:
            true
        case .ioError, .cancelled, .internalError, .exhaustedRetries, .storageError, .attemptStalled, .attemptTimeout, .engineCrashed,
            .outOfMemory:
            false
        }
    }
}

/// An error of the engine and the jobs it runs: a stable code and a sentence a person can act on.
public typealias MomentsError = CodedFailure<ErrorCode>
