import Foundation
import MomentsContract
import MomentsModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads: multipart through the API, or straight to storage above the server's threshold.
extension MomentsClient {
    // MARK: Upload

    /// Uploads `file` for a highlight of `targetDuration` seconds. The file is streamed from disk.
    /// `progress` is called as bytes go out (from a background thread).
    /// `codec` `.h264` asks for a newly encoded H.264 highlight; `.auto` (the default) lets the server
    /// copy the video's own H.264 or HEVC where it can.
    ///
    /// The submission carries an `Idempotency-Key`, so it is retried on network trouble and 5xx
    /// like any safe call: a retry whose first try reached the server gets the same job and spends
    /// no second highlight. Pass `idempotencyKey` (and keep it, e.g. with the file's record) to
    /// make a submission repeated after the app was suspended or relaunched the same job too; by
    /// default each call makes a new key.
    ///
    /// `choices` (API 1.1): segment lengths and count, and the frame's shape (`.portrait` makes a
    /// 9:16 Reel of a landscape clip, the crop following the action).
    ///
    /// `music` (API 1.2): a track of the server's music library (`music()` lists them) under the
    /// highlight, every cut on its beat, and how loud it is against the video's own sound. Or
    /// `musicFile`, a track of the app's own (MP3, M4A, WAV, FLAC, Ogg, AIFF; 10 s to 10 min, up to
    /// 64 MiB), sent with the video; `music` then sets only its volume and whether the video's own
    /// sound stays, and names no track.
    ///
    /// `metadata` (API 1.2): strings of the app's own (an album, a user, a draft; up to 1 KB as
    /// JSON), kept with the job and returned in its status, details, list, events and webhooks.
    public func upload(
        file: URL, targetDuration: Int = HighlightLimits.defaultTargetDuration, quality: Quality = .high, codec: VideoCodecChoice = .auto,
        callbackURL: String? = nil, choices: HighlightChoices = HighlightChoices(), music: MusicChoice? = nil,
        musicFile: URL? = nil, metadata: [String: String]? = nil, idempotencyKey: String = UUID().uuidString,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(MomentsClientError) -> UploadAccepted {
        let size = try Self.size(of: file)
        let music = try Self.musicChoice(music, file: musicFile)
        let metadata = try Self.checked(metadata)
        if size >= directUploadThreshold {
            do {
                return try await directUpload(
                    file: file, size: size, targetDuration: targetDuration, quality: quality,
                    codec: codec, callbackURL: callbackURL, choices: choices, music: music, musicFile: musicFile,
                    metadata: metadata, idempotencyKey: idempotencyKey, progress: progress)
            } catch  where error.code == "direct_upload_unavailable" {
                // The server stores files itself (local storage): fall back to multipart.
            }
        }
        return try await multipartUpload(
            file: file, targetDuration: targetDuration, quality: quality, codec: codec, callbackURL: callbackURL,
            choices: choices, music: music, musicFile: musicFile, metadata: metadata, idempotencyKey: idempotencyKey,
            progress: progress)
    }

    /// `metadata` as the server will take it (`JobMetadata`), refused here with the server's code.
    static func checked(_ metadata: [String: String]?) throws(MomentsClientError) -> [String: String]? {
        do { return try metadata.flatMap(JobMetadata.check) } catch {
            throw MomentsClientError(kind: .invalidRequest, code: "invalid_metadata", message: error.message)
        }
    }

    /// The music asked for: with `file`, a track of the app's own at `choice`'s volume and with its
    /// `keepSourceAudio` (and no library track).
    static func musicChoice(_ choice: MusicChoice?, file: URL?) throws(MomentsClientError) -> MusicChoice? {
        guard let file else { return choice }
        guard choice?.trackID == nil else {
            throw MomentsClientError(
                kind: .invalidRequest, code: "invalid_music_id",
                message: "Send a library track (music.trackID) or musicFile, not both.")
        }
        return MusicChoice(
            uploaded: file.lastPathComponent, volume: choice?.volume ?? MusicChoice.defaultVolume,
            keepSourceAudio: choice?.keepSourceAudio ?? true)
    }

    static func size(of file: URL) throws(MomentsClientError) -> Int64 {
        do {
            return (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
        } catch {
            throw MomentsClientError(
                kind: .file, code: "file_unreadable", message: "Cannot read \(file.lastPathComponent): \(error.localizedDescription)")
        }
    }

    func multipartUpload(
        file: URL, targetDuration: Int, quality: Quality, codec: VideoCodecChoice, callbackURL: String?,
        choices: HighlightChoices = HighlightChoices(), music: MusicChoice? = nil, musicFile: URL? = nil,
        metadata: [String: String]? = nil, idempotencyKey: String,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(MomentsClientError) -> UploadAccepted {
        var fields = [("target_duration", String(targetDuration)), ("quality", quality.rawValue)]
        if codec != .auto { fields.append(("codec", codec.rawValue)) }
        if let callbackURL { fields.append(("callback_url", callbackURL)) }
        if let value = choices.minSegment { fields.append(("min_segment", String(value))) }
        if let value = choices.maxSegment { fields.append(("max_segment", String(value))) }
        if let value = choices.maxSegments { fields.append(("max_segments", String(value))) }
        if choices.aspect != .source { fields.append(("aspect", choices.aspect.rawValue)) }
        if choices.fps != .upTo30 { fields.append(("fps", choices.fps.rawValue)) }
        // A library track by its id; a track of the app's own in the form's `music` part.
        if let music, music.trackID != nil || musicFile != nil {
            if let id = music.trackID { fields.append(("music_id", id.uuidString.lowercased())) }
            fields += [("music_volume", String(music.volume)), ("keep_source_audio", String(music.keepSourceAudio))]
        }
        if let metadata { fields.append(("metadata", JobMetadata.json(metadata))) }
        let form = try MultipartFile.write(file: file, fields: fields, music: musicFile)
        defer { try? FileManager.default.removeItem(at: form.url) }
        var request = request("POST", "api/v1/upload")
        request.setValue("multipart/form-data; boundary=\(form.boundary)", forHTTPHeaderField: "Content-Type")
        request.setValue(String(form.size), forHTTPHeaderField: "Content-Length")
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        let result = try await retrying { () async throws(MomentsClientError) in
            try await Transfer.perform(
                request, body: .file(form.url), timeout: self.timeout,
                sent: { sent, _ in
                    progress?(TransferProgress(bytes: min(sent, form.size), total: form.size))
                })
        }
        return try decode(result)
    }

    func directUpload(
        file: URL, size: Int64, targetDuration: Int, quality: Quality, codec: VideoCodecChoice, callbackURL: String?,
        choices: HighlightChoices = HighlightChoices(), music: MusicChoice? = nil, musicFile: URL? = nil,
        metadata: [String: String]? = nil, idempotencyKey: String,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(MomentsClientError) -> UploadAccepted {
        let musicSize = try musicFile.map { file throws(MomentsClientError) in try Self.size(of: file) }
        let reservation: DirectUpload = try await send(
            "POST", "api/v1/uploads",
            body: try encode(
                DirectUploadRequest(
                    filename: file.lastPathComponent, targetDuration: targetDuration,
                    quality: quality.rawValue, callbackURL: callbackURL,
                    codec: codec == .auto ? nil : codec.rawValue, sizeBytes: size, choices: choices,
                    music: music, musicSizeBytes: musicSize, metadata: metadata)),
            headers: ["Idempotency-Key": idempotencyKey], idempotent: true)
        if let musicFile, let musicSize {
            guard let address = reservation.musicUploadURL else {
                throw MomentsClientError.invalid("The server gave no URL for the music track.")
            }
            try await put(musicFile, size: musicSize, to: address, method: reservation.method, progress: nil)
        }
        try await put(file, size: size, to: reservation.uploadURL, method: reservation.method, progress: progress)
        return try await send("POST", "api/v1/jobs/\(reservation.jobID.uuidString.lowercased())/start", idempotent: true)
    }

    /// PUTs `file` to a presigned URL of storage; a PUT of the same bytes to the same key is safe to repeat.
    func put(
        _ file: URL, size: Int64, to address: String, method: String,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(MomentsClientError) {
        guard let target = URL(string: address) else {
            throw MomentsClientError.invalid("The server's upload URL is not a URL.")
        }
        var put = URLRequest(url: target)
        put.httpMethod = method
        put.setValue(String(size), forHTTPHeaderField: "Content-Length")
        put.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        try Self.check(
            try await retrying { () async throws(MomentsClientError) in
                try await Transfer.perform(
                    put, body: .file(file), timeout: self.timeout,
                    sent: { sent, _ in
                        progress?(TransferProgress(bytes: min(sent, size), total: size))
                    })
            })
    }
}
