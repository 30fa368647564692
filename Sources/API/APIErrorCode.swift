import HTTPTypes
import MomentsModel

/// Every code the API answers with, in one list: controllers throw `APIError` with one of these,
/// the OpenAPI document's `ErrorCode` enum is `all`, and docs/api.md's error table names each
/// (`ErrorCodeListTests` holds the three together). In the style of swift-jobs' `JobQueueError`:
/// static members of a struct, so a new code is one line here.
public struct APIErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    // Requests the API cannot take (400, 404, 405, 413, 422).
    public static let invalidRequest = APIErrorCode(rawValue: "invalid_request")
    public static let missingFile = APIErrorCode(rawValue: "missing_file")
    public static let duplicateFile = APIErrorCode(rawValue: "duplicate_file")
    public static let tooManyParts = APIErrorCode(rawValue: "too_many_parts")
    public static let partHeadersTooLarge = APIErrorCode(rawValue: "part_headers_too_large")
    public static let fieldsTooLarge = APIErrorCode(rawValue: "fields_too_large")
    public static let formTooLarge = APIErrorCode(rawValue: "form_too_large")
    public static let fileTooLarge = APIErrorCode(rawValue: "file_too_large")
    public static let musicTooLarge = APIErrorCode(rawValue: "music_too_large")
    public static let sizeBytesRequired = APIErrorCode(rawValue: "size_bytes_required")
    public static let uploadSizeMismatch = APIErrorCode(rawValue: "upload_size_mismatch")
    public static let invalidStatus = APIErrorCode(rawValue: "invalid_status")
    public static let invalidLimit = APIErrorCode(rawValue: "invalid_limit")
    public static let invalidCursor = APIErrorCode(rawValue: "invalid_cursor")
    public static let invalidIdempotencyKey = APIErrorCode(rawValue: "invalid_idempotency_key")
    public static let invalidFormat = APIErrorCode(rawValue: "invalid_format")
    public static let invalidRange = APIErrorCode(rawValue: "invalid_range")
    public static let invalidJobId = APIErrorCode(rawValue: "invalid_job_id")
    public static let invalidAction = APIErrorCode(rawValue: "invalid_action")
    public static let invalidFilter = APIErrorCode(rawValue: "invalid_filter")
    public static let idempotencyKeyReused = APIErrorCode(rawValue: "idempotency_key_reused")
    public static let invalidTargetDuration = APIErrorCode(rawValue: "invalid_target_duration")
    public static let invalidQuality = APIErrorCode(rawValue: "invalid_quality")
    public static let invalidCodec = APIErrorCode(rawValue: "invalid_codec")
    public static let invalidCallbackUrl = APIErrorCode(rawValue: "invalid_callback_url")
    public static let webhooksDisabled = APIErrorCode(rawValue: "webhooks_disabled")
    public static let invalidMusicId = APIErrorCode(rawValue: "invalid_music_id")
    public static let invalidMusicVolume = APIErrorCode(rawValue: "invalid_music_volume")
    public static let invalidKeepSourceAudio = APIErrorCode(rawValue: "invalid_keep_source_audio")
    public static let invalidMinSegment = APIErrorCode(rawValue: "invalid_min_segment")
    public static let invalidMaxSegment = APIErrorCode(rawValue: "invalid_max_segment")
    public static let invalidMaxSegments = APIErrorCode(rawValue: "invalid_max_segments")
    public static let invalidAspect = APIErrorCode(rawValue: "invalid_aspect")
    public static let invalidFps = APIErrorCode(rawValue: "invalid_fps")
    public static let invalidSegments = APIErrorCode(rawValue: "invalid_segments")
    public static let invalidMetadata = APIErrorCode(rawValue: "invalid_metadata")
    public static let invalidPushToken = APIErrorCode(rawValue: "invalid_push_token")
    public static let invalidPushEnvironment = APIErrorCode(rawValue: "invalid_push_environment")
    public static let notFound = APIErrorCode(rawValue: "not_found")
    public static let jobNotFound = APIErrorCode(rawValue: "job_not_found")
    public static let webhookNotFound = APIErrorCode(rawValue: "webhook_not_found")
    public static let operationNotFound = APIErrorCode(rawValue: "operation_not_found")
    public static let methodNotAllowed = APIErrorCode(rawValue: "method_not_allowed")
    public static let unsupportedMediaType = APIErrorCode(rawValue: "unsupported_media_type")

    // Who may ask (401, 402, 403, 429).
    public static let authRequired = APIErrorCode(rawValue: "auth_required")
    public static let invalidToken = APIErrorCode(rawValue: "invalid_token")
    public static let invalidSignature = APIErrorCode(rawValue: "invalid_signature")
    public static let linkExpired = APIErrorCode(rawValue: "link_expired")
    public static let metricsTokenRequired = APIErrorCode(rawValue: "metrics_token_required")
    public static let consoleDisabled = APIErrorCode(rawValue: "console_disabled")
    public static let consoleSignInRequired = APIErrorCode(rawValue: "console_sign_in_required")
    public static let csrfTokenInvalid = APIErrorCode(rawValue: "csrf_token_invalid")
    public static let crossOriginRequest = APIErrorCode(rawValue: "cross_origin_request")
    public static let quotaExceeded = APIErrorCode(rawValue: "quota_exceeded")
    public static let rateLimited = APIErrorCode(rawValue: "rate_limited")
    public static let tooManyStreams = APIErrorCode(rawValue: "too_many_streams")

    // The job's state (409, 410).
    public static let notReady = APIErrorCode(rawValue: "not_ready")
    public static let alreadyFinished = APIErrorCode(rawValue: "already_finished")
    public static let alreadyStarted = APIErrorCode(rawValue: "already_started")
    public static let notFailed = APIErrorCode(rawValue: "not_failed")
    public static let notFinished = APIErrorCode(rawValue: "not_finished")
    public static let nothingToDo = APIErrorCode(rawValue: "nothing_to_do")
    public static let uploadMissing = APIErrorCode(rawValue: "upload_missing")
    public static let musicMissing = APIErrorCode(rawValue: "music_missing")
    public static let uploadIncomplete = APIErrorCode(rawValue: "upload_incomplete")
    public static let startInProgress = APIErrorCode(rawValue: "start_in_progress")
    public static let directUploadUnavailable = APIErrorCode(rawValue: "direct_upload_unavailable")
    public static let resultExpired = APIErrorCode(rawValue: "result_expired")
    public static let erased = APIErrorCode(rawValue: "erased")
    public static let pushUnavailable = APIErrorCode(rawValue: "push_unavailable")
    public static let timelineUnavailable = APIErrorCode(rawValue: "timeline_unavailable")
    public static let posterUnavailable = APIErrorCode(rawValue: "poster_unavailable")
    public static let thumbnailsUnavailable = APIErrorCode(rawValue: "thumbnails_unavailable")

    // The server (500, 503, 507).
    public static let internalError = APIErrorCode(rawValue: "internal_error")
    public static let serviceUnavailable = APIErrorCode(rawValue: "service_unavailable")
    public static let insufficientStorage = APIErrorCode(rawValue: "insufficient_storage")

    // The file is no video or track we can use (415), as the engine's probe says; `ioError` when
    // reading it failed on our side (500).
    public static let notAVideo = APIErrorCode(rawValue: "not_a_video")
    public static let noVideoStream = APIErrorCode(rawValue: "no_video_stream")
    public static let unsupportedCodec = APIErrorCode(rawValue: "unsupported_codec")
    public static let corruptMedia = APIErrorCode(rawValue: "corrupt_media")
    public static let tooShort = APIErrorCode(rawValue: "too_short")
    public static let tooLong = APIErrorCode(rawValue: "too_long")
    public static let resolutionTooLarge = APIErrorCode(rawValue: "resolution_too_large")
    public static let notAudio = APIErrorCode(rawValue: "not_audio")
    public static let ioError = APIErrorCode(rawValue: "io_error")

    /// The engine's code for a file it refused, as the API answers it.
    public init(_ code: ErrorCode) { rawValue = code.rawValue }

    /// Hummingbird's own errors other than 404 (a body over the router's limit, …): `http_<status>`.
    public static func http(_ status: HTTPResponse.Status) -> APIErrorCode { APIErrorCode(rawValue: "http_\(status.code)") }

    /// Every code above, in their order.
    public static let all: [APIErrorCode] = [
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
        .unsupportedCodec, .corruptMedia, .tooShort, .tooLong, .resolutionTooLarge, .notAudio, .ioError,
    ]
}
