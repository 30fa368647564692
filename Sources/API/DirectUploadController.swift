import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import Media
import MomentsContract
import MomentsModel
import Storage

/// Direct uploads for big files: the app sends the bytes straight to storage with a presigned PUT
/// URL, then asks the API to start the job.
///
/// `POST /api/v1/uploads` reserves a job id and returns a URL for a staging key; the reservation
/// (file name, settings, declared size) lives in the reservation store (Redis) until
/// `HighlightLimits.stagedUploadHours` after the URL expires: storage checks the URL when a PUT
/// begins, so one that began in time may end long after. With `size_bytes`, the length is part of
/// the URL's signature, so storage refuses any other. `POST /api/v1/jobs/{id}/start` copies the
/// staged object inside storage to a source key no URL can write, probes the copy by ranged
/// reads, writes the job row and queues it, and only then deletes the staged object: until the
/// job is committed, nothing the client sent is gone, and a start that failed (a database blip, a
/// quota race) can be asked again. A PUT after the start changes nothing; no row exists before it.
///
/// A resumable upload (`"resumable": true`, API 1.1) is an S3 multipart upload of the staging key:
/// the answer gives equal parts (the last one shorter) with a signed PUT URL each; `GET
/// /api/v1/uploads/{id}/parts` says which parts storage holds and signs fresh URLs for the rest, so
/// a client that lost its network, or was suspended or relaunched, sends only what is missing; the
/// start assembles the parts first. The reservation lives `HighlightLimits.resumableUploadHours`;
/// the retention sweep aborts multipart uploads left unfinished after that.
struct DirectUploadController: Sendable {
    let store: JobStore
    let reservations: any PersistStore
    let storage: any ObjectStore
    let configuration: APIConfiguration
    let quota: Quota
    let idempotency: Idempotency
    let limiter: RateLimiter

    struct Reservation: Codable {
        var filename: String?
        var targetDuration: Int?
        var quality: String?
        var codec: String?
        var callbackURL: String?
        /// The length the client declared, if it did (the URL accepts only that length).
        var size: Int64?
        /// Who reserved it: only they may start it.
        var owner: String?
        var minSegment: Double?
        var maxSegment: Double?
        var maxSegments: Int?
        var aspect: String?
        var fps: String?
        var resumable: Bool?
        /// API 1.2: the soundtrack (a library track), as for `POST /api/v1/upload`.
        var musicID: String?
        var musicVolume: Double?
        var keepSourceAudio: Bool?
        /// Or a track of the app's own, PUT to its own staging key: its name and declared length.
        var musicFilename: String?
        var musicSize: Int64?
        /// API 1.2: the app's own strings (`JobMetadata`).
        var metadata: [String: String]?
        /// A resumable upload's multipart upload id and part size, and when it was reserved.
        var uploadID: String?
        var partSize: Int64?
        var reservedAt: Date?

        enum CodingKeys: String, CodingKey {
            case filename, targetDuration = "target_duration", quality, codec, callbackURL = "callback_url", size = "size_bytes", owner
            case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect, fps, resumable
            case uploadID = "upload_id", partSize = "part_size", reservedAt = "reserved_at"
            case musicID = "music_id", musicVolume = "music_volume", keepSourceAudio = "keep_source_audio"
            case musicFilename = "music_filename", musicSize = "music_size_bytes", metadata
        }

        func music(_ store: JobStore) async throws -> MusicChoice? {
            try await MusicController.choice(
                id: musicID, volume: musicVolume.map { String($0) },
                keepSourceAudio: keepSourceAudio.map { String($0) }, store: store, uploaded: musicFilename)
        }

        func choices() throws -> HighlightChoices {
            try UploadController.choices(
                minSegment: minSegment.map { String($0) }, maxSegment: maxSegment.map { String($0) },
                maxSegments: maxSegments.map(String.init), aspect: aspect, fps: fps,
                targetDuration: targetDuration ?? HighlightLimits.defaultTargetDuration,
                quality: try UploadController.quality(quality))
        }
    }

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.post("uploads") { request, context in try await reserve(request, context: context) }
        group.post("jobs/{id}/start") { request, context in try await start(context) }
        group.get("uploads/{id}/parts") { request, context in try await parts(context) }
    }

    static let resumableLifetime = Duration.seconds(HighlightLimits.resumableUploadHours * 3600)
    /// How long a direct upload's reservation outlives its URL.
    static let stagedLifetime = Duration.seconds(HighlightLimits.stagedUploadHours * 3600)

    /// The part size for a file of `size` bytes: at least `minimum`, and large enough that no more
    /// than 10,000 parts (S3's limit) are needed, in whole MiB.
    static func partSize(for size: Int64, minimum: Int64) -> Int64 {
        let needed = (size + 9_999) / 10_000
        return max(minimum, ((needed + (1 << 20) - 1) >> 20) << 20)
    }

    private func reserve(_ request: Request, context: MomentsRequestContext) async throws -> EditedResponse<DirectUpload> {
        guard let presigner = storage.presigning else {
            throw APIError(
                .conflict, .directUploadUnavailable,
                "Direct uploads need S3-compatible storage; upload with POST /api/v1/upload instead.")
        }
        let key = try Idempotency.key(of: request)
        if try await idempotency.earlierJob(owner: context.identity.owner, key: key) == nil { try await quota.checkRoom(context.identity) }
        try await limiter.admitUpload(request, context: context)
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: 16 * 1024) } catch {
            throw APIError(.contentTooLarge, .invalidRequest, "The request body is too large; send a small JSON object.")
        }
        var reservation = Reservation()
        if body.readableBytes > 0 {
            do { reservation = try JSONDecoder().decode(Reservation.self, from: Data(body.readableBytesView)) } catch let error
                as DecodingError where error.codingPath.first?.stringValue == Reservation.CodingKeys.metadata.stringValue
            {
                throw UploadController.invalidMetadata(JobMetadata.rule)
            } catch {
                throw APIError(
                    .badRequest, .invalidRequest, #"Send JSON like {"filename": "IMG_0042.MOV", "target_duration": 30, "quality": "high"}."#)
            }
        }
        _ = try UploadController.targetDuration(reservation.targetDuration.map(String.init))
        _ = try UploadController.quality(reservation.quality)
        _ = try UploadController.codec(reservation.codec)
        _ = try reservation.choices()
        do { reservation.metadata = try reservation.metadata.flatMap(JobMetadata.check) } catch {
            throw UploadController.invalidMetadata(error.message)
        }
        reservation.musicFilename = reservation.musicFilename.map(UploadController.sanitize)
        _ = try await reservation.music(store)
        if reservation.musicFilename != nil {
            guard let size = reservation.musicSize, size > 0 else {
                throw APIError(.badRequest, .invalidRequest, "With music_filename, send music_size_bytes: the track's length in bytes, above 0.")
            }
            guard size <= MusicController.largestTrack else { throw MusicController.tooLarge(MusicController.largestTrack) }
        } else if reservation.musicSize != nil {
            throw APIError(.badRequest, .invalidRequest, "music_size_bytes goes with music_filename, the name of the track to upload.")
        }
        reservation.callbackURL = try await UploadController.callbackURL(reservation.callbackURL, configuration: configuration)
        reservation.filename = reservation.filename.map(UploadController.sanitize)
        reservation.owner = context.identity.owner
        if let size = reservation.size {
            guard size > 0 else { throw APIError(.badRequest, .invalidRequest, "size_bytes must be the file's length in bytes, above 0.") }
            guard size <= configuration.maxUploadBytes else { throw UploadController.tooLarge(configuration.maxUploadBytes) }
        }
        let resumable = reservation.resumable == true
        if resumable {
            guard storage.resumable != nil else {
                throw APIError(
                    .conflict, .directUploadUnavailable,
                    "Resumable uploads need S3-compatible storage; upload with POST /api/v1/upload instead.")
            }
            guard reservation.size != nil else {
                throw APIError(
                    .badRequest, .sizeBytesRequired, "A resumable upload needs size_bytes, the file's length in bytes, to divide it into parts.")
            }
        }
        var id = UUID()
        var replayed = false
        if let key {
            // The same reservation again: the same job id, with a fresh URL for its staging key.
            let fingerprint = Idempotency.fingerprint(fields: ["": String(decoding: body.readableBytesView, as: UTF8.self)])
            let proposed = id
            id = try await idempotency.claim(
                owner: context.identity.owner, key: key, endpoint: "uploads", fingerprint: fingerprint,
                proposed: proposed)
            replayed = id != proposed
        }
        // The app's own track: one PUT of its declared length to a staging key of its own.
        let lifetime = configuration.uploadLinkLifetime
        let musicURL = try reservation.musicSize.map { try musicUploadURL(id, size: $0, presigner: presigner) }
        if resumable {
            var reply = try await reserveResumable(id, reservation: reservation, replayed: replayed)
            reply.musicUploadURL = musicURL
            return EditedResponse(headers: replayed ? [Idempotency.replayed: "true"] : [:], response: reply)
        }
        // S3 checks a presigned URL when the upload begins, so a long upload that began in time
        // finishes, and its reservation waits for it.
        let url = try presigner.signedURL(for: ObjectKey.staged(id), method: "PUT", expires: lifetime, contentLength: reservation.size)
        try await reservations.set(key: Self.reservationKey(id), value: reservation, expires: lifetime + Self.stagedLifetime)
        let reply = DirectUpload(
            jobID: id, uploadURL: url.absoluteString,
            expiresAt: Date().addingTimeInterval(TimeInterval(lifetime.components.seconds)),
            maxSizeBytes: configuration.maxUploadBytes, musicUploadURL: musicURL)
        return EditedResponse(headers: replayed ? [Idempotency.replayed: "true"] : [:], response: reply)
    }

    /// Starts (or, for the same request repeated under its idempotency key, finds) the multipart
    /// upload of a resumable reservation and answers its parts.
    private func reserveResumable(_ id: UUID, reservation: Reservation, replayed: Bool) async throws -> DirectUpload {
        guard let store = storage.resumable, let size = reservation.size else { throw APIError.jobNotFound() }
        var reservation = reservation
        if replayed, let earlier = try await reservations.get(key: Self.reservationKey(id), as: Reservation.self), earlier.uploadID != nil {
            reservation = earlier
        } else {
            reservation.uploadID = try await store.startUpload(key: ObjectKey.staged(id), contentType: "video/mp4")
            reservation.partSize = Self.partSize(for: size, minimum: configuration.uploadPartBytes)
            reservation.reservedAt = Date()
            try await reservations.set(key: Self.reservationKey(id), value: reservation, expires: Self.resumableLifetime)
        }
        let parts = try partsAnswer(id, reservation: reservation, received: [:])
        return DirectUpload(
            jobID: id, uploadURL: parts.parts.first?.url ?? "", expiresAt: parts.urlsExpireAt,
            maxSizeBytes: configuration.maxUploadBytes, resumable: parts)
    }

    /// `GET /api/v1/uploads/{id}/parts`: which parts storage holds, and fresh URLs for the others.
    private func parts(_ context: MomentsRequestContext) async throws -> UploadParts {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw APIError.jobNotFound() }
        if try await startedJob(id, owner: context.identity.owner) != nil {
            throw APIError(.conflict, .alreadyStarted, "This upload was started: follow its job's status.")
        }
        guard let reservation = try await reservations.get(key: Self.reservationKey(id), as: Reservation.self),
            reservation.owner == context.identity.owner, let uploadID = reservation.uploadID, let store = storage.resumable
        else {
            throw APIError(.notFound, .jobNotFound, "There is no resumable upload with this id, or it has expired.")
        }
        guard let held = try await Self.heldParts(store, key: ObjectKey.staged(id), uploadID: uploadID) else {
            throw APIError(.notFound, .jobNotFound, "This resumable upload has expired; upload the file again.")
        }
        var answer = try partsAnswer(id, reservation: reservation, received: Dictionary(held.map { ($0.number, $0) }) { $1 })
        // The app's own track, while it has not arrived: a fresh URL for it too.
        if let size = reservation.musicSize, let presigner = storage.presigning,
            (try? await storage.head(key: ObjectKey.stagedMusic(id))) == nil
        {
            answer.musicUploadURL = try musicUploadURL(id, size: size, presigner: presigner)
        }
        return answer
    }

    /// The parts of a resumable reservation: each received (by number, at its right size) or with a
    /// fresh signed URL (at most the first 1,000 missing ones: ask again for more).
    private func partsAnswer(_ id: UUID, reservation: Reservation, received: [Int: UploadedPart]) throws -> UploadParts {
        guard let store = storage.resumable, let uploadID = reservation.uploadID, let size = reservation.size,
            let partSize = reservation.partSize
        else { throw APIError.jobNotFound() }
        let count = Int((size + partSize - 1) / partSize)
        let lifetime = configuration.uploadLinkLifetime
        var signed = 0
        var parts: [UploadParts.Part] = []
        for number in 1...max(1, count) {
            let offset = Int64(number - 1) * partSize
            let length = min(partSize, size - offset)
            let arrived = received[number]?.size == length
            var url: String?
            if !arrived && signed < 1000 {
                url = try store.signedPartURL(
                    key: ObjectKey.staged(id), uploadID: uploadID, part: number, expires: lifetime,
                    contentLength: length
                ).absoluteString
                signed += 1
            }
            parts.append(.init(partNumber: number, offset: offset, sizeBytes: length, received: arrived, url: url))
        }
        let reservedAt = reservation.reservedAt ?? Date()
        return UploadParts(
            jobID: id, sizeBytes: size, partSize: partSize, partCount: count, parts: parts,
            urlsExpireAt: Date().addingTimeInterval(TimeInterval(lifetime.components.seconds)),
            uploadExpiresAt: reservedAt.addingTimeInterval(TimeInterval(Self.resumableLifetime.components.seconds)))
    }

    /// The parts storage holds of a multipart upload; nil when the upload is gone.
    static func heldParts(_ store: any ResumableObjectStore, key: String, uploadID: String) async throws -> [UploadedPart]? {
        do {
            return try await store.uploadedParts(key: key, uploadID: uploadID)
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
    }

    /// Assembles a resumable upload's parts into the staging object: 409 `upload_incomplete` while
    /// parts are missing, 400 `upload_size_mismatch` for a part of the wrong length.
    private func assemble(_ id: UUID, reservation: Reservation) async throws {
        guard let store = storage.resumable, let uploadID = reservation.uploadID else { return }
        // Gone: assembled by an earlier start (or expired: the staged object's check says which).
        guard let held = try await Self.heldParts(store, key: ObjectKey.staged(id), uploadID: uploadID) else { return }
        let answer = try partsAnswer(id, reservation: reservation, received: Dictionary(held.map { ($0.number, $0) }) { $1 })
        let missing = answer.missing
        if !missing.isEmpty {
            let wrong = missing.filter { part in held.contains { $0.number == part.partNumber } }
            if let part = wrong.first {
                throw APIError(
                    .badRequest, .uploadSizeMismatch,
                    "Part \(part.partNumber) has \(held.first { $0.number == part.partNumber }!.size) bytes, not \(part.sizeBytes); PUT it again.")
            }
            let numbers = missing.prefix(10).map { String($0.partNumber) }.joined(separator: ", ")
            throw APIError(
                .conflict, .uploadIncomplete,
                "\(answer.partCount - missing.count) of \(answer.partCount) parts have arrived; PUT part\(missing.count == 1 ? "" : "s") \(numbers)\(missing.count > 10 ? " and the rest" : "") (GET /api/v1/uploads/\(id.uuidString.lowercased())/parts has their URLs), then start again."
            )
        }
        try await store.completeUpload(
            key: ObjectKey.staged(id), uploadID: uploadID,
            parts: held.filter { $0.number <= answer.partCount })
    }

    private func start(_ context: MomentsRequestContext) async throws -> UploadAccepted {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw APIError.jobNotFound() }
        if let started = try await startedJob(id, owner: context.identity.owner) { return started }
        guard let reservation = try await reservations.get(key: Self.reservationKey(id), as: Reservation.self),
            reservation.owner == context.identity.owner
        else {
            throw APIError(.notFound, .jobNotFound, "There is no upload with this id, or its upload URL has expired.")
        }
        // One start at a time per upload: a second one would copy and probe again, and its failure
        // would delete the source the first one queued.
        guard try await reservations.claim(key: Self.startKey(id), value: true, expires: .seconds(600)) else {
            throw APIError(.conflict, .startInProgress, "This upload is being started; ask again in a few seconds.")
        }
        do {
            let accepted = try await start(id, reservation: reservation, context: context)
            try? await reservations.remove(key: Self.startKey(id))
            return accepted
        } catch {
            try? await reservations.remove(key: Self.startKey(id))
            throw error
        }
    }

    /// Starts the upload `id`, holding its start claim.
    private func start(_ id: UUID, reservation: Reservation, context: MomentsRequestContext) async throws -> UploadAccepted {
        if let started = try await startedJob(id, owner: context.identity.owner) { return started }
        try await assemble(id, reservation: reservation)
        let staged = try await stagedObject(id)
        guard staged.size > 0 else { throw APIError(.badRequest, .missingFile, "The uploaded file is empty.") }
        guard staged.size <= configuration.maxUploadBytes else {
            try? await storage.delete(key: ObjectKey.staged(id))
            throw UploadController.tooLarge(configuration.maxUploadBytes)
        }
        if let declared = reservation.size, declared != staged.size {
            try? await storage.delete(key: ObjectKey.staged(id))
            throw APIError(
                .badRequest, .uploadSizeMismatch,
                "The uploaded file has \(staged.size) bytes, not the \(declared) declared; upload it again.")
        }
        // From here on the job reads a copy no URL can write: a PUT after this changes nothing.
        // The staged object stays until the job is committed: a start that fails can be asked again.
        let sourceKey = ObjectKey.directSource(of: id)
        try await storage.copy(from: ObjectKey.staged(id), to: sourceKey)
        do {
            let info = try await probe(sourceKey, size: staged.size)
            let targetDuration = reservation.targetDuration ?? HighlightLimits.defaultTargetDuration
            let (quality, codec, choices) = (
                try UploadController.quality(reservation.quality),
                try UploadController.codec(reservation.codec), try reservation.choices()
            )
            var music = try await reservation.music(store)
            if let filename = music?.filename {
                music?.uploadedKey = try await stageMusic(id, filename: filename, declared: reservation.musicSize)
            }
            do {
                _ = try await quota.submit(
                    NewJob(
                        id: id, owner: reservation.owner, originalFilename: reservation.filename,
                        sourceKey: sourceKey, sourceSize: staged.size, sourceDuration: info.duration,
                        targetDuration: Double(targetDuration),
                        quality: quality, codec: codec, callbackURL: reservation.callbackURL, choices: choices,
                        music: music, metadata: reservation.metadata),
                    identity: context.identity)
            } catch {
                if let key = music?.uploadedKey { await UploadController.removeUnclaimed(key, of: id, after: error, store: store, storage: storage) }
                throw error
            }
            try? await reservations.remove(key: Self.reservationKey(id))
            try? await storage.delete(key: ObjectKey.staged(id))
            if music?.uploadedKey != nil { try? await storage.delete(key: ObjectKey.stagedMusic(id)) }
            context.logger.info(
                "job created",
                metadata: [
                    "job_id": "\(id.uuidString.lowercased())", "bytes": "\(staged.size)",
                    "duration": "\(info.duration)", "direct": "true",
                ])
            return UploadAccepted(
                jobID: id, estimatedTime: UploadController.estimatedTime(info),
                estimatedSize: SizeEstimate.bytes(
                    info, targetDuration: targetDuration, quality: quality,
                    codec: codec, choices: choices))
        } catch {
            await UploadController.removeUnclaimed(sourceKey, of: id, after: error, store: store, storage: storage)
            throw error
        }
    }

    /// Checks the app's own track arrived whole at its staging key and is a track we can use (read
    /// into a file of the upload directory and probed as a `music` part is), and copies it to where
    /// the job keeps it; returns that key. The staged object stays until the job is committed.
    private func stageMusic(_ id: UUID, filename: String, declared: Int64?) async throws -> String {
        let staged = try await stagedMusic(id)
        if let declared, declared != staged.size {
            throw APIError(
                .badRequest, .uploadSizeMismatch,
                "The uploaded music track has \(staged.size) bytes, not the \(declared) declared; upload it again.")
        }
        guard staged.size <= MusicController.largestTrack else { throw MusicController.tooLarge(MusicController.largestTrack) }
        let file = configuration.uploadDirectory.appendingPathComponent("moments-music-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await storage.get(key: ObjectKey.stagedMusic(id), to: file, limit: MusicController.largestTrack)
        try await MusicController.probe(file, bytes: staged.size)
        let key = ObjectKey.uploadedMusic(of: id, filename: filename)
        _ = try await storage.copy(from: ObjectKey.stagedMusic(id), to: key)
        return key
    }

    /// The answer for an upload started already (a retried start must not fail); someone else's is not found.
    private func startedJob(_ id: UUID, owner: String?) async throws -> UploadAccepted? {
        guard let existing = try await store.job(id) else { return nil }
        guard existing.owner == owner else { throw APIError.jobNotFound() }
        return UploadAccepted(jobID: existing.id, estimatedTime: nil)
    }

    /// A presigned PUT of exactly `size` bytes for the app's own track.
    private func musicUploadURL(_ id: UUID, size: Int64, presigner: any PresigningObjectStore) throws -> String {
        try presigner.signedURL(
            for: ObjectKey.stagedMusic(id), method: "PUT", expires: configuration.uploadLinkLifetime,
            contentLength: size
        ).absoluteString
    }

    private func stagedMusic(_ id: UUID) async throws -> ObjectInfo {
        do {
            return try await storage.head(key: ObjectKey.stagedMusic(id))
        } catch  where error.code == .notFound {
            throw APIError(
                .conflict, .musicMissing,
                "The music track has not arrived yet: PUT it to the music_upload_url first, then start the job.")
        }
    }

    private func stagedObject(_ id: UUID) async throws -> ObjectInfo {
        do {
            return try await storage.head(key: ObjectKey.staged(id))
        } catch  where error.code == .notFound {
            throw APIError(.conflict, .uploadMissing, "The file has not arrived yet: PUT it to the upload URL first, then start the job.")
        }
    }

    /// Probes the stored source by ranged reads (on a thread of its own; they block): the same
    /// checks and answers as a multipart upload's probe, and 503 when storage fails under it.
    private func probe(_ key: String, size: Int64) async throws -> MediaInfo {
        let input = StoredObjectInput(storage: storage, key: key, size: size)
        let name = key.split(separator: "/").last.map(String.init) ?? key
        do {
            return try await UploadController.probe { () throws(MomentsError) in try MediaProbe.probe(input, name: name) }
        } catch let error as APIError {
            switch input.failure {
            case nil: throw error
            case let failure? where failure.code == .tooLarge:
                throw APIError(
                    .unsupportedMediaType, .corruptMedia,
                    "The video's index could not be found in its first \(input.budget >> 20) MiB read; the file looks damaged. Export it again and retry. \(UploadController.accepted)"
                )
            case let failure?: throw failure  // storage's own answer (404, 503) from the error middleware
            }
        }
    }

    static func reservationKey(_ id: UUID) -> String { "upload:\(id.uuidString.lowercased())" }

    static func startKey(_ id: UUID) -> String { "upload-start:\(id.uuidString.lowercased())" }
}

extension DecodingError {
    /// Where in the document the decoder stopped.
    var codingPath: [any CodingKey] {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            context.codingPath
        @unknown default: []
        }
    }
}
