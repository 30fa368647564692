import CurlHTTP
import Foundation
import HTTPTypes
import Hummingbird
import Jobs
import Logging
import MomentsModel
import MomentsSupport
import NIOCore
import Synchronization

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
        try await admit(keys, what: "uploads", context: context)
    }

    /// Counts a device registration against its address (apart from its uploads): per window, and
    /// per day, so that registering new devices cannot reset the free plan's quota more than
    /// `registrationsPerDay` times. An IPv6 client counts by its /64, which one subscriber holds whole.
    func admitRegistration(_ request: Request, context: MomentsRequestContext) async throws {
        guard let ip = clientAddress(request, context: context) else { return }
        if limits.uploadsPerIP > 0 {
            try await admit(
                [RateLimitKey("ratelimit:devices-ip:\(ip)", limit: limits.uploadsPerIP)], what: "device registrations",
                context: context)
        }
        if limits.registrationsPerDay > 0 {
            try await admit(
                [RateLimitKey("ratelimit:devices-day:\(Self.subscriber(ip))", limit: limits.registrationsPerDay)],
                window: .seconds(86_400), what: "new devices from this network today", context: context)
        }
    }

    /// Counts a console sign-in attempt against its address: 10 per 15 minutes, so the admin token
    /// cannot be guessed at speed (always on, whatever the upload limits say).
    func admitSignIn(_ request: Request, context: MomentsRequestContext) async throws {
        guard let ip = clientAddress(request, context: context) else { return }
        try await admit(
            [RateLimitKey("ratelimit:console-sign-in:\(Self.subscriber(ip))", limit: 10)], window: .seconds(900),
            what: "sign-in attempts from this address", context: context)
    }

    /// The address an IPv4 client has, or the /64 an IPv6 client's address lies in.
    static func subscriber(_ ip: String) -> String {
        guard let address = IPAddress(ip), address.bytes.count == 16 else { return ip }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(address.bytes[$0]) << 8 | UInt16(address.bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    private func admit(_ keys: [RateLimitKey], window: Duration? = nil, what: String, context: MomentsRequestContext) async throws {
        guard !keys.isEmpty else { return }
        let verdict: RateLimitVerdict
        do {
            verdict = try await store.admit(keys, window: window ?? limits.window)
        } catch {
            context.logger.warning("rate limit not checked: the store did not answer", metadata: ["error": "\(error)"])
            return
        }
        context.rateLimit?.record(verdict)
        guard !verdict.admitted else { return }
        let seconds = Self.seconds(verdict.reset)
        let when =
            seconds <= 120 ? "\(seconds) second\(seconds == 1 ? "" : "s")" : "about \((seconds + 1799) / 3600) hour\(seconds > 5400 ? "s" : "")"
        throw APIError(
            .tooManyRequests, .rateLimited, "Too many \(what). Please wait \(when) and try again.",
            headers: [.retryAfter: String(seconds)])
    }

    /// Whole seconds, rounded up: a wait of 0.2 s is "1", never "0" (which would say "now").
    static func seconds(_ duration: Duration) -> Int { max(1, Int(saturating: duration.inSeconds.rounded(.up))) }

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

/// What the limiters of one request found (a registration counts against two), for
/// `RateLimitHeadersMiddleware` to state on its answer.
final class RateLimitNote: Sendable {
    private let verdict = Mutex<RateLimitVerdict?>(nil)

    func record(_ found: RateLimitVerdict) {
        verdict.withLock { current in
            // A refusal is what the answer says; otherwise the key with the least room.
            current = current.map { found.admitted ? .tightest($0, found) : found } ?? found
        }
    }

    var recorded: RateLimitVerdict? { verdict.withLock { $0 } }
}

/// States a rate-limited route's limit on its every answer, success or error: `RateLimit-Limit`,
/// `RateLimit-Remaining` and `RateLimit-Reset` (seconds), as the IETF's RateLimit header fields
/// draft names them. Routes no limiter counted answer without them.
struct RateLimitHeadersMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: MomentsRequestContext, next: (Request, MomentsRequestContext) async throws -> Response
    ) async throws -> Response {
        // Only requests that change something are ever counted.
        guard request.method == .post else { return try await next(request, context) }
        let note = RateLimitNote()
        var context = context
        context.rateLimit = note
        do {
            var response = try await next(request, context)
            if let verdict = note.recorded { response.headers.append(contentsOf: Self.fields(verdict)) }
            return response
        } catch var error as APIError {
            if let verdict = note.recorded { error.headers.append(contentsOf: Self.fields(verdict)) }
            throw error
        }
    }

    static let limit = HTTPField.Name("RateLimit-Limit")!
    static let remaining = HTTPField.Name("RateLimit-Remaining")!
    static let reset = HTTPField.Name("RateLimit-Reset")!

    static func fields(_ verdict: RateLimitVerdict) -> HTTPFields {
        [
            limit: String(verdict.limit), remaining: String(verdict.remaining),
            // As `Retry-After` counts, so a refusal's two agree.
            reset: String(RateLimiter.seconds(verdict.reset)),
        ]
    }
}
