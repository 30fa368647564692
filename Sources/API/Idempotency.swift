import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Jobs
import MomentsSupport

/// `Idempotency-Key` on the submissions (`POST /api/v1/upload`, `POST /api/v1/uploads`), as
/// Stripe and the IETF draft define it: a client that lost the answer (a dropped connection, a
/// timeout, the app suspended) sends the same request with the same key again and gets the same
/// job, without spending a second highlight of its quota. Keys are per owner and live 24 hours
/// (`idempotency_keys`); the same key with a different request is refused (422
/// `idempotency_key_reused`).
///
/// The key is recorded with the job id the request is given before anything is created under that
/// id, so a request that died half-way is finished by its retry under the same id: the job row
/// and its source key follow from the id, and the store creates a job once.
struct Idempotency: Sendable {
    let jobs: Jobs

    static let header = HTTPField.Name("Idempotency-Key")!
    /// Set on an answer that repeats an earlier request's job.
    static let replayed = HTTPField.Name("Idempotent-Replayed")!

    /// The request's key: 1 to 255 visible ASCII characters; nil without the header.
    static func key(of request: Request) throws -> String? {
        guard let value = request.headers[header] else { return nil }
        guard (1...255).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(
                .badRequest, .invalidIdempotencyKey,
                "Idempotency-Key must be 1 to 255 visible ASCII characters without spaces (a new UUID for each new upload is a good one).")
        }
        return value
    }

    /// The job id an earlier request with `key` was given, when one was (for skipping the quota's
    /// early check: the retry of a request that took the last highlight must not be refused).
    func earlierJob(owner: String?, key: String?) async throws -> UUID? {
        guard let key else { return nil }
        return try await jobs.earlierJob(owner: owner, idempotencyKey: key)
    }

    /// The job id this request works under: `proposed` when the key is new (or expired), else the
    /// id the key was first given, if the request is the same (endpoint and fingerprint).
    func claim(owner: String?, key: String, endpoint: String, fingerprint: String, proposed: UUID) async throws -> UUID {
        let record = try await jobs.claim(idempotencyKey: key, owner: owner, endpoint: endpoint, fingerprint: fingerprint, proposed: proposed)
        guard record.endpoint == endpoint, record.fingerprint == fingerprint else {
            throw APIError(
                .unprocessableContent, .idempotencyKeyReused,
                "This Idempotency-Key came with a different request in the last 24 hours. Use a new key for a new upload.")
        }
        return record.jobID
    }

    /// A fingerprint of what a request asks for: its settings (sorted by name) and, for a
    /// multipart upload, the SHA-256 of its file (taken as the file was spooled).
    static func fingerprint(fields: [String: String], fileDigest: Data? = nil) -> String {
        var hasher = SHA256()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            hasher.update(data: Data("\(name.utf8.count):\(name)=\(value.utf8.count):\(value);".utf8))
        }
        if let fileDigest { hasher.update(data: Data("file=".utf8) + fileDigest) }
        return Hex.lowercase(hasher.finalize())
    }
}
