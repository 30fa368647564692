/// Every error code a Moments server answers with (`error.code`), fails a job with (`error_code`)
/// or MomentsKit itself gives (`MomentsClientError.code`), as a value to switch on, so an app can
/// say each in its own words and language instead of showing the server's English sentence.
/// A code this version does not know (a newer server's) is kept whole as `.other`, never lost;
/// Hummingbird's own refusals (`http_413`, …) come as `.http`.
///
///     switch error.errorCode {
///     case .quotaExceeded: String(localized: "No highlights left this month.")
///     case .notAVideo, .noVideoStream: String(localized: "That file isn't a video we can use.")
///     default: error.message
///     }
public enum MomentsErrorCode: Hashable, Sendable, RawRepresentable, Codable, CustomStringConvertible {
    // What the API answers (the server's `APIErrorCode.all`, in its order).
    case invalidRequest, missingFile, duplicateFile, tooManyParts, partHeadersTooLarge, fieldsTooLarge, formTooLarge
    case fileTooLarge, musicTooLarge, sizeBytesRequired, uploadSizeMismatch, invalidStatus, invalidLimit
    case invalidCursor, invalidIdempotencyKey, invalidFormat, invalidRange, invalidJobId, invalidAction
    case invalidFilter, idempotencyKeyReused, invalidTargetDuration, invalidQuality, invalidCodec
    case invalidCallbackUrl, webhooksDisabled, invalidMusicId, invalidMusicVolume, invalidKeepSourceAudio
    case invalidMinSegment, invalidMaxSegment, invalidMaxSegments, invalidAspect, invalidFps, invalidSegments, invalidMetadata
    case invalidPushToken, invalidPushEnvironment
    case notFound, jobNotFound, webhookNotFound, operationNotFound, methodNotAllowed, unsupportedMediaType
    case authRequired, invalidToken, invalidSignature, linkExpired, metricsTokenRequired, consoleDisabled, consoleSignInRequired, csrfTokenInvalid
    case crossOriginRequest, quotaExceeded, rateLimited, tooManyStreams, notReady, alreadyFinished, alreadyStarted
    case notFailed, notFinished, nothingToDo, uploadMissing, musicMissing, uploadIncomplete, startInProgress
    case directUploadUnavailable, resultExpired, erased, pushUnavailable, timelineUnavailable, posterUnavailable, thumbnailsUnavailable
    case internalError, serviceUnavailable, insufficientStorage, notAVideo, noVideoStream, unsupportedCodec
    case corruptMedia, tooShort, tooLong, resolutionTooLarge, notAudio, ioError
    // What a job may fail with, beyond those.
    case invalidArgument, cancelled, exhaustedRetries, storageError, sourceMissing, sourceChanged, attemptStalled
    case attemptTimeout, engineCrashed, outOfMemory, musicUnavailable
    // MomentsKit's own.
    case networkError, invalidResponse, fileError, fileUnreadable, fileChanged, unsupported
    /// `http_<status>`: the web framework's own refusal.
    case http(Int)
    /// A code this version of MomentsKit does not know.
    case other(String)

    public init(rawValue: String) {
        if let known = Self.byName[rawValue] {
            self = known
        } else if rawValue.hasPrefix("http_"), rawValue.count == 8, let status = Int(rawValue.dropFirst(5)) {
            self = .http(status)
        } else {
            self = .other(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .missingFile: "missing_file"
        case .duplicateFile: "duplicate_file"
        case .tooManyParts: "too_many_parts"
        case .partHeadersTooLarge: "part_headers_too_large"
        case .fieldsTooLarge: "fields_too_large"
        case .formTooLarge: "form_too_large"
        case .fileTooLarge: "file_too_large"
        case .musicTooLarge: "music_too_large"
        case .sizeBytesRequired: "size_bytes_required"
        case .uploadSizeMismatch: "upload_size_mismatch"
        case .invalidStatus: "invalid_status"
        case .invalidLimit: "invalid_limit"
        case .invalidCursor: "invalid_cursor"
        case .invalidIdempotencyKey: "invalid_idempotency_key"
        case .invalidFormat: "invalid_format"
        case .invalidRange: "invalid_range"
        case .invalidJobId: "invalid_job_id"
        case .invalidAction: "invalid_action"
        case .invalidFilter: "invalid_filter"
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .invalidTargetDuration: "invalid_target_duration"
        case .invalidQuality: "invalid_quality"
        case .invalidCodec: "invalid_codec"
        case .invalidCallbackUrl: "invalid_callback_url"
        case .webhooksDisabled: "webhooks_disabled"
        case .invalidMusicId: "invalid_music_id"
        case .invalidMusicVolume: "invalid_music_volume"
        case .invalidKeepSourceAudio: "invalid_keep_source_audio"
        case .invalidMinSegment: "invalid_min_segment"
        case .invalidMaxSegment: "invalid_max_segment"
        case .invalidMaxSegments: "invalid_max_segments"
        case .invalidAspect: "invalid_aspect"
        case .invalidFps: "invalid_fps"
        case .invalidSegments: "invalid_segments"
        case .invalidMetadata: "invalid_metadata"
        case .invalidPushToken: "invalid_push_token"
        case .invalidPushEnvironment: "invalid_push_environment"
        case .notFound: "not_found"
        case .jobNotFound: "job_not_found"
        case .webhookNotFound: "webhook_not_found"
        case .operationNotFound: "operation_not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .unsupportedMediaType: "unsupported_media_type"
        case .authRequired: "auth_required"
        case .invalidToken: "invalid_token"
        case .invalidSignature: "invalid_signature"
        case .linkExpired: "link_expired"
        case .metricsTokenRequired: "metrics_token_required"
        case .consoleDisabled: "console_disabled"
        case .consoleSignInRequired: "console_sign_in_required"
        case .csrfTokenInvalid: "csrf_token_invalid"
        case .crossOriginRequest: "cross_origin_request"
        case .quotaExceeded: "quota_exceeded"
        case .rateLimited: "rate_limited"
        case .tooManyStreams: "too_many_streams"
        case .notReady: "not_ready"
        case .alreadyFinished: "already_finished"
        case .alreadyStarted: "already_started"
        case .notFailed: "not_failed"
        case .notFinished: "not_finished"
        case .nothingToDo: "nothing_to_do"
        case .uploadMissing: "upload_missing"
        case .musicMissing: "music_missing"
        case .uploadIncomplete: "upload_incomplete"
        case .startInProgress: "start_in_progress"
        case .directUploadUnavailable: "direct_upload_unavailable"
        case .resultExpired: "result_expired"
        case .erased: "erased"
        case .pushUnavailable: "push_unavailable"
        case .timelineUnavailable: "timeline_unavailable"
        case .posterUnavailable: "poster_unavailable"
        case .thumbnailsUnavailable: "thumbnails_unavailable"
        case .internalError: "internal_error"
        case .serviceUnavailable: "service_unavailable"
        case .insufficientStorage: "insufficient_storage"
        case .notAVideo: "not_a_video"
        case .noVideoStream: "no_video_stream"
        case .unsupportedCodec: "unsupported_codec"
        case .corruptMedia: "corrupt_media"
        case .tooShort: "too_short"
        case .tooLong: "too_long"
        case .resolutionTooLarge: "resolution_too_large"
        case .notAudio: "not_audio"
        case .ioError: "io_error"
        case .invalidArgument: "invalid_argument"
        case .cancelled: "cancelled"
        case .exhaustedRetries: "exhausted_retries"
        case .storageError: "storage_error"
        case .sourceMissing: "source_missing"
        case .sourceChanged: "source_changed"
        case .attemptStalled: "attempt_stalled"
        case .attemptTimeout: "attempt_timeout"
        case .engineCrashed: "engine_crashed"
        case .outOfMemory: "out_of_memory"
        case .musicUnavailable: "music_unavailable"
        case .networkError: "network_error"
        case .invalidResponse: "invalid_response"
        case .fileError: "file_error"
        case .fileUnreadable: "file_unreadable"
        case .fileChanged: "file_changed"
        case .unsupported: "unsupported"
        case .http(let status): "http_\(status)"
        case .other(let code): code
        }
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws { self.init(rawValue: try decoder.singleValueContainer().decode(String.self)) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Every code with a case of its own, in the order above.
    public static let allKnown: [MomentsErrorCode] = [
        .invalidRequest, .missingFile, .duplicateFile, .tooManyParts, .partHeadersTooLarge, .fieldsTooLarge, .formTooLarge, .fileTooLarge,
        .musicTooLarge, .sizeBytesRequired, .uploadSizeMismatch, .invalidStatus, .invalidLimit, .invalidCursor, .invalidIdempotencyKey,
        .invalidFormat, .invalidRange, .invalidJobId, .invalidAction, .invalidFilter, .idempotencyKeyReused, .invalidTargetDuration,
        .invalidQuality, .invalidCodec, .invalidCallbackUrl, .webhooksDisabled, .invalidMusicId, .invalidMusicVolume,
        .invalidKeepSourceAudio, .invalidMinSegment, .invalidMaxSegment, .invalidMaxSegments, .invalidAspect, .invalidFps, .invalidSegments,
        .invalidMetadata, .invalidPushToken, .invalidPushEnvironment, .notFound, .jobNotFound, .webhookNotFound, .operationNotFound,
        .methodNotAllowed, .unsupportedMediaType, .authRequired, .invalidToken, .invalidSignature, .linkExpired, .metricsTokenRequired,
        .consoleDisabled, .consoleSignInRequired, .csrfTokenInvalid, .crossOriginRequest, .quotaExceeded, .rateLimited, .tooManyStreams,
        .notReady, .alreadyFinished, .alreadyStarted, .notFailed, .notFinished, .nothingToDo, .uploadMissing, .musicMissing,
        .uploadIncomplete, .startInProgress, .directUploadUnavailable, .resultExpired, .erased, .pushUnavailable, .timelineUnavailable,
        .posterUnavailable, .thumbnailsUnavailable, .internalError, .serviceUnavailable, .insufficientStorage, .notAVideo, .noVideoStream,
        .unsupportedCodec, .corruptMedia, .tooShort, .tooLong, .resolutionTooLarge, .notAudio, .ioError, .invalidArgument, .cancelled,
        .exhaustedRetries, .storageError, .sourceMissing, .sourceChanged, .attemptStalled, .attemptTimeout, .engineCrashed, .outOfMemory,
        .musicUnavailable, .networkError, .invalidResponse, .fileError, .fileUnreadable, .fileChanged, .unsupported,
    ]

    /// (Equality and hashing are `RawRepresentable`'s, by `rawValue`: the table is keyed by name.)
    private static let byName = Dictionary(uniqueKeysWithValues: allKnown.map { ($0.rawValue, $0) })
}
