import Foundation
import HTTPTypes
import Hummingbird
import Jobs
import Logging
import MomentsModel
import NIOCore

/// Upload rate limits per owner and per client address, shared by every API node through the
/// rate-limit store (Redis): a sliding window per key. A request is admitted only if every key it
/// counts against has room, and then counts against all of them. A refusal says how long until
/// the oldest request leaves the window. When the store cannot be reached the request is admitted
/// (and logged): a limit must not take uploads down with it.
struct RateLimiter: Sendable {
    let store: any RateLimitStore
    let limits: APIConfiguration.RateLimits
    let trustedProxyHops: Int

    /// Counts an upload (or reservation) against its owner and its address; 429 with `Retry-After` when over.
    func admitUpload(_ request: Request, context: MomentsRequestContext) async throws {
        var keys: [RateLimitKey] = []
        if let owner = context.identity.owner, limits.uploadsPerOwner > 0 {
            keys.append(RateLimitKey("ratelimit:owner:\(owner)", limit: limits.uploadsPerOwner))
        }
        if limits.uploadsPerIP > 0, let ip = clientAddress(request, context: context) {
            keys.append(RateLimitKey("ratelimit:ip:\(ip)", limit: limits.uploadsPerIP))
        }
        try await admit(keys, what: "uploads", logger: context.logger)
    }

    /// Counts a device registration against its address (apart from its uploads).
    func admitRegistration(_ request: Request, context: MomentsRequestContext) async throws {
        guard limits.uploadsPerIP > 0, let ip = clientAddress(request, context: context) else { return }
        try await admit([RateLimitKey("ratelimit:devices-ip:\(ip)", limit: limits.uploadsPerIP)], what: "device registrations",
                        logger: context.logger)
    }

    private func admit(_ keys: [RateLimitKey], what: String, logger: Logger) async throws {
        guard !keys.isEmpty else { return }
        let wait: Duration?
        do {
            wait = try await store.admit(keys, window: limits.window)
        } catch {
            logger.warning("rate limit not checked: the store did not answer", metadata: ["error": "\(error)"])
            return
        }
        guard let wait else { return }
        let seconds = max(1, Int(saturating: wait.inSeconds.rounded(.up)))
        throw APIError(.tooManyRequests, "rate_limited",
                       "Too many \(what) in a short time. Please wait \(seconds) second\(seconds == 1 ? "" : "s") and try again.",
                       headers: [.retryAfter: String(seconds)])
    }

    /// The client's address: the socket's peer, or, behind `trustedProxyHops` proxies, the entry of
    /// `X-Forwarded-For` the nearest trusted proxy wrote (entries further left are the client's word).
    func clientAddress(_ request: Request, context: MomentsRequestContext) -> String? {
        if trustedProxyHops > 0 {
            let entries = request.headers[values: HTTPField.Name("X-Forwarded-For")!]
                .flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
            if entries.count >= trustedProxyHops { return entries[entries.count - trustedProxyHops] }
        }
        return context.remoteAddress?.ipAddress
    }
}
