import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import MomentsContract
import MomentsModel
import Storage

/// Direct uploads for big files: the app sends the bytes straight to storage with a presigned PUT
/// URL, then asks the API to start the job.
///
/// `POST /api/v1/uploads` reserves a job id and returns the URL; the reservation (file name and
/// settings) lives in the reservation store (Redis) until the URL expires.
/// `POST /api/v1/jobs/{id}/start` checks the object is there, writes the job row and queues it. No row exists before the start, so nothing waits
/// for a file that never comes.
struct DirectUploadController: Sendable {
    let store: JobStore
    let reservations: any PersistStore
    let storage: any ObjectStore
    let configuration: APIConfiguration
    let quota: Quota
    let limiter: RateLimiter

    struct Reservation: Codable {
        var filename: String?
        var targetDuration: Int?
        var quality: String?
        var codec: String?
        var callbackURL: String?
        /// Who reserved it: only they may start it.
        var owner: String?

        enum CodingKeys: String, CodingKey {
            case filename, targetDuration = "target_duration", quality, codec, callbackURL = "callback_url", owner
        }
    }

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.post("uploads") { request, context in try await reserve(request, context: context) }
        group.post("jobs/{id}/start") { request, context in try await start(context) }
    }

    private func reserve(_ request: Request, context: MomentsRequestContext) async throws -> DirectUpload {
        guard let presigner = storage.presigning else {
            throw APIError(.conflict, "direct_upload_unavailable",
                           "Direct uploads need S3-compatible storage; upload with POST /api/v1/upload instead.")
        }
        try await quota.checkRoom(context.identity)
        try await limiter.admitUpload(request, context: context)
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: 16 * 1024) } catch {
            throw APIError(.contentTooLarge, "invalid_request", "The request body is too large; send a small JSON object.")
        }
        var reservation = Reservation()
        if body.readableBytes > 0 {
            do { reservation = try JSONDecoder().decode(Reservation.self, from: Data(body.readableBytesView)) } catch {
                throw APIError(.badRequest, "invalid_request", #"Send JSON like {"filename": "IMG_0042.MOV", "target_duration": 30, "quality": "high"}."#)
            }
        }
        _ = try UploadController.targetDuration(reservation.targetDuration.map(String.init))
        _ = try UploadController.quality(reservation.quality)
        _ = try UploadController.codec(reservation.codec)
        reservation.callbackURL = try await UploadController.callbackURL(reservation.callbackURL, configuration: configuration)
        reservation.filename = reservation.filename.map(UploadController.sanitize)
        reservation.owner = context.identity.owner
        let id = UUID()
        let lifetime = configuration.downloadLinkLifetime * 4  // an hour by default: long enough for 2 GiB on a slow line
        let url = try presigner.signedURL(for: Self.sourceKey(id), method: "PUT", expires: lifetime)
        try await reservations.set(key: Self.reservationKey(id), value: reservation, expires: lifetime)
        return DirectUpload(jobID: id, uploadURL: url.absoluteString,
                        expiresAt: Date().addingTimeInterval(TimeInterval(lifetime.components.seconds)),
                        maxSizeBytes: configuration.maxUploadBytes)
    }

    private func start(_ context: MomentsRequestContext) async throws -> UploadAccepted {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw APIError.jobNotFound() }
        let existing = try await store.job(id)
        if let existing {
            // Started already: the same answer again (a retried request must not fail); someone else's: not found.
            guard existing.owner == context.identity.owner else { throw APIError.jobNotFound() }
            return UploadAccepted(jobID: existing.id, estimatedTime: nil)
        }
        guard let reservation = try await reservations.get(key: Self.reservationKey(id), as: Reservation.self),
              reservation.owner == context.identity.owner else {
            throw APIError(.notFound, "job_not_found", "There is no upload with this id, or its upload URL has expired.")
        }
        let object = try await uploadedObject(id)
        guard object.size > 0 else { throw APIError(.badRequest, "missing_file", "The uploaded file is empty.") }
        guard object.size <= configuration.maxUploadBytes else {
            try? await storage.delete(key: Self.sourceKey(id))
            throw UploadController.tooLarge(configuration.maxUploadBytes)
        }
        _ = try await quota.submit(NewJob(id: id, owner: reservation.owner, originalFilename: reservation.filename,
                                          sourceKey: Self.sourceKey(id), sourceSize: object.size,
                                          targetDuration: Double(reservation.targetDuration ?? HighlightLimits.defaultTargetDuration),
                                          quality: try UploadController.quality(reservation.quality),
                                          codec: try UploadController.codec(reservation.codec),
                                          callbackURL: reservation.callbackURL), identity: context.identity)
        try? await reservations.remove(key: Self.reservationKey(id))
        return UploadAccepted(jobID: id, estimatedTime: nil)
    }

    private func uploadedObject(_ id: UUID) async throws -> ObjectInfo {
        do {
            return try await storage.head(key: Self.sourceKey(id))
        } catch where error.code == .notFound {
            throw APIError(.conflict, "upload_missing", "The file has not arrived yet: PUT it to the upload URL first, then start the job.")
        }
    }

    static func sourceKey(_ id: UUID) -> String { "sources/\(id.uuidString.lowercased())-direct" }

    static func reservationKey(_ id: UUID) -> String { "upload:\(id.uuidString.lowercased())" }
}
