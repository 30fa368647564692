import Crypto
import Foundation
import JobStore
import MomentsContract
import MomentsSupport
import Storage

/// Links to a completed highlight's files that work without the device's token for a while
/// (`PLAYBACK_URL_SECONDS`), as `AVPlayer(url:)` and an image view need them. On S3 storage they
/// are presigned GETs of storage itself, which serves byte ranges; on local storage they are URLs
/// of this API (`GET /api/v1/play/{id}/{file}`), signed with HMAC-SHA256 under a key from
/// `URL_SIGNING_SECRET`, served with ranges as the download is.
struct PlaybackLinks: Sendable {
    /// The files a link may name.
    enum File: String, CaseIterable, Sendable {
        case highlight = "highlight.mp4", poster = "poster.jpg", thumbnails = "thumbnails.jpg"

        /// The job's object for this file, if it has one.
        func key(of job: JobRecord) -> String? {
            switch self {
            case .highlight: job.resultKey
            case .poster: job.posterKey
            case .thumbnails: job.thumbnailsKey
            }
        }

        var contentType: String { self == .highlight ? "video/mp4" : "image/jpeg" }
    }

    let storage: any ObjectStore
    let lifetime: Duration
    /// The HMAC key's bytes (SymmetricKey itself is not Sendable).
    private let keyBytes: [UInt8]

    /// `secret` nil: a key made now, so links die with this process (fine for one node; set
    /// `URL_SIGNING_SECRET` on every node to keep them across restarts and replicas).
    init(storage: any ObjectStore, lifetime: Duration, secret: String?) {
        self.storage = storage
        self.lifetime = lifetime
        if let secret {
            keyBytes = Array(SHA256.hash(data: Data("moments-playback-v1:\(secret)".utf8)))
        } else {
            var generator = SystemRandomNumberGenerator()
            keyBytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        }
    }

    /// The links of a completed job whose files are kept, valid until `expires`; nil otherwise.
    func links(_ job: JobRecord, base: String?, now: Date = Date()) -> PlaybackURLs? {
        guard job.status == .completed, job.resultExpiredAt == nil, job.erasedAt == nil, job.resultKey != nil else { return nil }
        let expires = Int64((now.timeIntervalSince1970 + lifetime.inSeconds).rounded(.down))
        var urls: [File: String] = [:]
        for file in File.allCases {
            guard let key = file.key(of: job) else { continue }
            if let presigner = storage.presigning {
                urls[file] = (try? presigner.signedURL(for: key, method: "GET", expires: lifetime))?.absoluteString
            } else if let base {
                let id = job.id.uuidString.lowercased()
                urls[file] = "\(base)/api/v1/play/\(id)/\(file.rawValue)?expires=\(expires)&signature=\(signature(id, file, expires))"
            }
        }
        guard let playback = urls[.highlight] else { return nil }
        return PlaybackURLs(
            playbackURL: playback, posterURL: urls[.poster], thumbnailsURL: urls[.thumbnails],
            expiresAt: Date(timeIntervalSince1970: Double(expires)))
    }

    /// Checks a link's `expires` and `signature`: 403 `invalid_signature` when they are not what
    /// this server signed for the job and file, 403 `link_expired` once the time has passed.
    func check(job: String, file: File, expires: String?, signature sent: String?, now: Date = Date()) throws(APIError) {
        guard let expiresText = expires, let expires = Int64(expiresText), let sent,
            MetricsController.equalInConstantTime(signature(job, file, expires), sent.lowercased())
        else {
            throw APIError(
                .forbidden, .invalidSignature,
                "This link is not one this server signed, or it was changed. Ask for the job's details again for a fresh playback_url.")
        }
        guard Double(expires) > now.timeIntervalSince1970 else {
            throw APIError(
                .forbidden, .linkExpired,
                "This link expired at \(MomentsJSON.format(Date(timeIntervalSince1970: Double(expires)))). Ask for the job's details again for a fresh one."
            )
        }
    }

    /// Hex HMAC-SHA256 of `v1`, the job id (lower case), the file and the expiry time, one a line.
    private func signature(_ job: String, _ file: File, _ expires: Int64) -> String {
        let text = "v1\n\(job)\n\(file.rawValue)\n\(expires)"
        return Hex.lowercase(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: keyBytes)))
    }
}
