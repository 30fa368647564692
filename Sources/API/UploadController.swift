import Crypto
import CurlHTTP
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Logging
import Media
import MomentsContract
import MomentsModel
import MomentsSupport
import NIOCore
import Storage

/// `POST /api/v1/upload` and `GET /api/v1/upload/formats`.
///
/// The body streams through the multipart parser into a temporary file, never whole into memory.
/// The file is probed (the declared type is always `video/mp4`, so the bytes decide), stored, the
/// job row written, and only then the job queued: a client never gets the id of a job that does
/// not exist.
struct UploadController: Sendable {
    let store: JobStore
    let storage: any ObjectStore
    let configuration: APIConfiguration
    let quota: Quota
    let idempotency: Idempotency
    let limiter: RateLimiter
    static let accepted =
        "We accept MP4, MOV, M4V, 3GP, MKV, WebM and AVI videos from \(HighlightLimits.minimumSourceDuration) second "
        + "to \(HighlightLimits.maximumSourceDuration / 60) minutes long."

    static let extensions = ["mp4", "mov", "m4v", "3gp", "mkv", "webm", "avi"]

    /// What can be uploaded (`GET /api/v1/upload/formats`).
    static func formats(maxSizeBytes: Int64) -> UploadFormats {
        UploadFormats(
            extensions: extensions, containers: ["mp4", "mov", "3gp", "matroska", "webm", "avi"],
            maxSizeBytes: maxSizeBytes, maxDurationSeconds: HighlightLimits.maximumSourceDuration,
            targetDuration: .init(
                min: HighlightLimits.targetDurations.lowerBound,
                max: HighlightLimits.targetDurations.upperBound,
                default: HighlightLimits.defaultTargetDuration),
            qualities: Quality.allCases.map(\.rawValue), defaultQuality: Quality.high.rawValue,
            codecs: VideoCodecChoice.allCases.map(\.rawValue), defaultCodec: VideoCodecChoice.auto.rawValue)
    }

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.post("upload") { request, context in try await upload(request, context: context) }
        group.get("upload/formats") { _, _ in Self.formats(maxSizeBytes: configuration.maxUploadBytes) }
    }

    private func upload(_ request: Request, context: MomentsRequestContext) async throws -> EditedResponse<UploadAccepted> {
        guard let type = request.headers[.contentType], type.lowercased().hasPrefix("multipart/form-data"),
            let boundary = Self.boundary(type)
        else {
            throw APIError(.badRequest, .invalidRequest, "Send the video as multipart/form-data with a part named 'file'.")
        }
        let owner = context.identity.owner
        let key = try Idempotency.key(of: request)
        // Refused before a byte of the video is read: over quota, too fast, or too large. (The
        // retry of a request that took the owner's last highlight is not over quota.)
        if try await idempotency.earlierJob(owner: owner, key: key) == nil { try await quota.checkRoom(context.identity) }
        try await limiter.admitUpload(request, context: context)
        if let length = request.headers[.contentLength].flatMap(Int64.init), length > configuration.maxUploadBytes {
            throw Self.tooLarge(configuration.maxUploadBytes)
        }
        let temporary = configuration.uploadDirectory.appendingPathComponent("moments-upload-\(UUID().uuidString)")
        let musicFile = temporary.appendingPathExtension("music")
        defer {
            try? FileManager.default.removeItem(at: temporary)
            try? FileManager.default.removeItem(at: musicFile)
        }
        // With a key, the file's SHA-256 is taken on its way to disk, for the request's fingerprint.
        let (form, digest) = try await receive(request.body, boundary: boundary, into: temporary, music: musicFile, hashing: key != nil)

        guard let filename = form.filename, form.fileBytes > 0 else {
            throw APIError(
                .badRequest, .missingFile,
                form.filename == nil
                    ? "The upload has no part named 'file'. Send the video in a part named 'file'."
                    : "The 'file' part is empty.")
        }
        let duration = try Self.targetDuration(form.fields["target_duration"])
        let quality = try Self.quality(form.fields["quality"])
        let codec = try Self.codec(form.fields["codec"])
        let choices = try Self.choices(
            minSegment: form.fields["min_segment"], maxSegment: form.fields["max_segment"],
            maxSegments: form.fields["max_segments"], aspect: form.fields["aspect"],
            fps: form.fields["fps"], targetDuration: duration, quality: quality)
        let callbackURL = try await Self.callbackURL(form.fields["callback_url"], configuration: configuration)
        let metadata = try Self.metadata(form.fields["metadata"])
        var music = try await MusicController.choice(
            id: form.fields["music_id"], volume: form.fields["music_volume"],
            keepSourceAudio: form.fields["keep_source_audio"], store: store,
            uploaded: form.musicFilename.map { Self.sanitize($0) })
        if music?.filename != nil { try await MusicController.probe(musicFile, bytes: form.musicBytes) }
        let info = try await Self.probe(temporary)
        let estimatedSize = SizeEstimate.bytes(info, targetDuration: duration, quality: quality, codec: codec, choices: choices)

        var id = UUID()
        if let key {
            // A music part counts by its name and length (a retry sends the same track).
            let music = form.musicFilename.map { [" music": "\($0):\(form.musicBytes)"] } ?? [:]
            let fingerprint = Idempotency.fingerprint(fields: form.fields.merging(["": filename].merging(music) { $1 }) { $1 }, fileDigest: digest)
            id = try await idempotency.claim(owner: owner, key: key, endpoint: "upload", fingerprint: fingerprint, proposed: id)
            if try await store.job(id) != nil {
                context.logger.info("upload repeated under its idempotency key", metadata: ["job_id": "\(id.uuidString.lowercased())"])
                return EditedResponse(
                    headers: [Idempotency.replayed: "true"],
                    response: UploadAccepted(jobID: id, estimatedTime: Self.estimatedTime(info), estimatedSize: estimatedSize))
            }
        }
        let name = Self.sanitize(filename)
        let sourceKey = ObjectKey.source(of: id, filename: name)
        try await storage.put(key: sourceKey, from: temporary, contentType: "video/mp4")
        if let filename = music?.filename {
            let key = ObjectKey.uploadedMusic(of: id, filename: filename)
            do {
                try await storage.put(key: key, from: musicFile, contentType: "application/octet-stream")
            } catch {
                try? await storage.delete(key: sourceKey)
                throw error
            }
            music?.uploadedKey = key
        }
        do {
            _ = try await quota.submit(
                NewJob(
                    id: id, owner: context.identity.owner, originalFilename: name, sourceKey: sourceKey,
                    sourceSize: form.fileBytes, sourceDuration: info.duration, targetDuration: Double(duration), quality: quality,
                    codec: codec, callbackURL: callbackURL, choices: choices, music: music, metadata: metadata), identity: context.identity)
        } catch {
            await Self.removeUnclaimed(sourceKey, of: id, after: error, store: store, storage: storage)
            if let key = music?.uploadedKey { await Self.removeUnclaimed(key, of: id, after: error, store: store, storage: storage) }
            throw error
        }
        context.logger.info(
            "job created", metadata: ["job_id": "\(id.uuidString.lowercased())", "bytes": "\(form.fileBytes)", "duration": "\(info.duration)"])
        return EditedResponse(response: UploadAccepted(jobID: id, estimatedTime: Self.estimatedTime(info), estimatedSize: estimatedSize))
    }

    /// Deletes the source stored for job `id` after its submission failed with `error`, when the
    /// store says no such job exists (no job, no orphaned source). A row may have been written
    /// before the failure (an answer lost on its way back): that job keeps its source. When the
    /// store cannot say, or the failure was the database's (asking again would only wait out
    /// another timeout before the client hears), the source stays too; if no job names it, the
    /// retention sweep deletes it a day later.
    static func removeUnclaimed(
        _ sourceKey: String, of id: UUID, after error: any Error, store: JobStore,
        storage: any ObjectStore
    ) async {
        if (error as? JobStoreError)?.code == .unavailable { return }
        do {
            guard try await store.job(id) == nil else { return }
        } catch {
            return
        }
        try? await storage.delete(key: sourceKey)
    }

    /// Seconds until the highlight is likely ready: the engine's speed at 1080p on two cores
    /// (docs/benchmarks.md), plus queueing and transfers.
    static func estimatedTime(_ info: MediaInfo) -> Int { Int(saturating: (info.duration / 8).rounded(.up)) + 5 }

    /// Streams the body through `FormReader`: the `file` part goes to `file`, the other parts are
    /// kept as text, within `FormLimits`. Refuses a body over the limit as soon as it passes it,
    /// and any other bad body at the first byte that shows it. `hashing`: also answers the file
    /// part's SHA-256.
    private func receive(
        _ body: RequestBody, boundary: String, into file: URL, music: URL,
        hashing: Bool
    ) async throws -> (FormReader.Form, digest: Data?) {
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = FileHandle(forWritingAtPath: file.path),
            FileManager.default.createFile(atPath: music.path, contents: nil), let musicHandle = FileHandle(forWritingAtPath: music.path)
        else {
            throw APIError(.internalServerError, .internalError, "The upload could not be stored for processing. Please try again.")
        }
        defer {
            try? handle.close()
            try? musicHandle.close()
        }
        let spool = Spool(handle, hashing: hashing)
        let musicSpool = Spool(musicHandle)
        var reader = FormReader(boundary: boundary, writeFile: { bytes in spool.append(bytes) }, writeMusic: { bytes in musicSpool.append(bytes) })
        var received: Int64 = 0
        do {
            for try await buffer in body {
                received += Int64(buffer.readableBytes)
                if received > configuration.maxUploadBytes { throw Self.tooLarge(configuration.maxUploadBytes) }
                try reader.consume(buffer)
                try await spool.writeIfFull()
                try await musicSpool.writeIfFull()
            }
            let form = try reader.finish()
            try await spool.write()
            try await musicSpool.write()
            return (form, spool.digest)
        } catch let error as APIError {
            throw error
        } catch let failure as FormFailure {
            throw Self.refusal(failure)
        } catch {
            throw APIError(.badRequest, .invalidRequest, "The multipart body could not be read: it ended early or is malformed.")
        }
    }

    /// The file part's bytes on their way to disk: gathered in memory up to `chunk` (1 MiB), then
    /// written in one go on a blocking-work thread, never on the cooperative pool that serves
    /// requests. The request waits for each write, so a slow disk slows its sender, not the node.
    /// With `hashing`, each chunk goes through SHA-256 on that thread before it is written.
    final class Spool: @unchecked Sendable {
        let handle: FileHandle
        private var pending: [UInt8] = []
        private var hasher: SHA256?
        static let chunk = 1 << 20

        init(_ handle: FileHandle, hashing: Bool = false) {
            self.handle = handle
            hasher = hashing ? SHA256() : nil
            pending.reserveCapacity(Self.chunk)
        }

        /// The SHA-256 of everything written, once the last write is done (nil without hashing).
        var digest: Data? { hasher.map { Data($0.finalize()) } }

        func append(_ bytes: UnsafeRawBufferPointer) { pending.append(contentsOf: bytes) }

        func writeIfFull() async throws {
            if pending.count >= Self.chunk { try await write() }
        }

        /// Writes what is gathered; 507 `insufficient_storage` when the disk refuses it.
        func write() async throws {
            guard !pending.isEmpty else { return }
            let bytes = pending, handle = handle
            pending.removeAll(keepingCapacity: true)
            do {
                // The writes are awaited one after another, so the hasher is never used by two threads at once.
                try await BlockingWork.run { [self] in
                    hasher?.update(data: bytes)
                    try handle.write(contentsOf: bytes)
                }
            } catch {
                throw UploadController.noRoom
            }
        }
    }

    static let noRoom = APIError(
        .init(code: 507, reasonPhrase: "Insufficient Storage"), .insufficientStorage,
        "The server has no room for this upload right now.")

    /// The status, code and sentence for a form `FormReader` refused.
    static func refusal(_ failure: FormFailure) -> APIError {
        switch failure {
        case .malformed(let detail):
            APIError(.badRequest, .invalidRequest, "The multipart body could not be read: \(detail).")
        case .truncated:
            APIError(.badRequest, .invalidRequest, "The multipart body ended before its closing boundary: the upload is incomplete.")
        case .headersTooLarge(let limit):
            APIError(.badRequest, .partHeadersTooLarge, "A part's headers are longer than \(limit / 1024) KiB, the most we accept.")
        case .tooManyParts(let limit):
            APIError(.badRequest, .tooManyParts, "The form has more than \(limit) parts: send the 'file' part and the documented fields only.")
        case .fieldTooLong("metadata", let limit):
            invalidMetadata("\(JobMetadata.rule) This one is longer than \(limit) bytes.")
        case .fieldTooLong(let name, _):
            APIError(.badRequest, .invalidRequest, "The form field '\(name)' is too long.")
        case .fieldsTooLarge(let limit):
            APIError(.badRequest, .fieldsTooLarge, "The form's text fields hold more than \(limit / 1024) KiB together, the most we accept.")
        case .secondFile:
            APIError(.badRequest, .duplicateFile, "The form has more than one part named 'file': send one video per upload.")
        case .secondMusic:
            APIError(.badRequest, .duplicateFile, "The form has more than one part named 'music': send one track per upload.")
        case .musicTooLarge(let limit):
            MusicController.tooLarge(limit)
        }
    }

    /// The boundary a `multipart/form-data` type names: 1–70 of RFC 2046's boundary characters, or nil.
    static func boundary(_ contentType: String) -> String? {
        guard let boundary = FormReader.parameter("boundary", in: contentType), (1...70).contains(boundary.utf8.count),
            boundary.utf8.allSatisfy(boundaryCharacters.contains)
        else { return nil }
        return boundary
    }

    private static let boundaryCharacters = Set(("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" + "'()+_,-./:=? ").utf8)

    static func tooLarge(_ limit: Int64) -> APIError {
        APIError(.contentTooLarge, .fileTooLarge, "The upload is larger than \(limit / (1 << 20)) MiB, the most we accept.")
    }

    static func targetDuration(_ text: String?) throws -> Int {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return HighlightLimits.defaultTargetDuration }
        let range = HighlightLimits.targetDurations
        guard let value = Int(text), range.contains(value) else {
            throw APIError(
                .unprocessableContent, .invalidTargetDuration,
                "target_duration must be a whole number of seconds from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }

    static func quality(_ text: String?) throws -> Quality {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return .high }
        guard let quality = Quality(rawValue: text.lowercased()) else {
            throw APIError(.unprocessableContent, .invalidQuality, "quality must be \(Quality.names).")
        }
        return quality
    }

    static func codec(_ text: String?) throws -> VideoCodecChoice {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return .auto }
        guard let codec = VideoCodecChoice(rawValue: text.lowercased()) else {
            throw APIError(
                .unprocessableContent, .invalidCodec,
                "codec must be auto (copy the video's own H.264 or HEVC where possible) or h264 (always H.264).")
        }
        return codec
    }

    /// The segment and framing choices (API 1.1): each absent or valid, and together possible for a
    /// highlight of `targetDuration` seconds. The code names the field: `invalid_min_segment`,
    /// `invalid_max_segment`, `invalid_max_segments`, `invalid_aspect`, `invalid_fps` (1.2), or
    /// `invalid_segments` when they contradict each other.
    static func choices(
        minSegment: String?, maxSegment: String?, maxSegments: String?, aspect: String?, fps: String?,
        targetDuration: Int, quality: Quality
    ) throws -> HighlightChoices {
        do {
            return try HighlightChoices.parse(
                minSegment: minSegment, maxSegment: maxSegment, maxSegments: maxSegments,
                aspect: aspect, fps: fps, targetDuration: Double(targetDuration), quality: quality)
        } catch {
            let code: APIErrorCode =
                switch error.field {
                case "min_segment": .invalidMinSegment
                case "max_segment": .invalidMaxSegment
                case "max_segments": .invalidMaxSegments
                case "aspect": .invalidAspect
                case "fps": .invalidFps
                default: .invalidSegments
                }
            throw APIError(.unprocessableContent, code, error.message)
        }
    }

    /// The app's own strings (`JobMetadata`) as a form field's JSON text; nil when absent or empty.
    static func metadata(_ text: String?) throws -> [String: String]? {
        do { return try JobMetadata.parse(text) } catch { throw invalidMetadata(error.message) }
    }

    static func invalidMetadata(_ message: String) -> APIError { APIError(.unprocessableContent, .invalidMetadata, message) }

    /// An absolute http(s) URL of at most 2,000 characters on an allowed port, whose host resolves
    /// to public addresses only (`DestinationPolicy`), or nothing.
    static func callbackURL(_ text: String?, configuration: APIConfiguration) async throws -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        guard configuration.webhooksEnabled else {
            throw APIError(
                .unprocessableContent, .webhooksDisabled,
                "This server sends no webhooks (WEBHOOK_SECRET is not set). Leave out callback_url and poll the status.")
        }
        guard DestinationPolicy.isWellFormed(text) else {
            throw APIError(.unprocessableContent, .invalidCallbackUrl, "callback_url must be \(DestinationPolicy.wellFormedRule).")
        }
        do {
            _ = try await configuration.callbacks.check(text)
        } catch {
            throw APIError(.unprocessableContent, .invalidCallbackUrl, "callback_url \(error.reason).")
        }
        return text
    }

    /// Reads the container and streams (no decoding) on a thread of its own.
    static func probe(_ file: URL) async throws -> MediaInfo {
        try await probe { () throws(MomentsError) in try MediaProbe.probe(file.path) }
    }

    /// Runs a probe on a thread of its own (it blocks); a refusal is 415 with the probe's code.
    static func probe(_ work: @escaping @Sendable () throws(MomentsError) -> MediaInfo) async throws -> MediaInfo {
        let result: Result<MediaInfo, MomentsError> = await withCheckedContinuation { continuation in
            Thread {
                do throws(MomentsError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        switch result {
        case .success(let info): return info
        case .failure(let error):
            throw APIError(.unsupportedMediaType, APIErrorCode(error.code), "\(error.message) \(accepted)")
        }
    }

    /// The file's own name without folders or control characters, at most 200 characters.
    static func sanitize(_ filename: String) -> String {
        let base = filename.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let clean = String(base.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
            .trimmingCharacters(in: .whitespaces)
        let trimmed = String(clean.prefix(200))
        return trimmed.isEmpty || trimmed == "." || trimmed == ".." ? "upload.mp4" : trimmed
    }
}
