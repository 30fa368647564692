import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Logging
import NIOCore

/// Upload rate limits per owner and per client address, shared by every API node through Redis.
///
/// A sliding window: each key is a sorted set of the admitted requests' times (Redis's clock). A
/// request is admitted only if every key it counts against has room, and then counts against all
/// of them, in one script. A refusal says how long until the oldest request leaves the window.
/// When Redis cannot be reached the request is admitted (and logged): a limit must not take
/// uploads down with it.
struct RateLimiter: Sendable {
    let redis: RedisClient
    let prefix: String
    let limits: APIConfiguration.RateLimits
    let trustedProxyHops: Int

    /// KEYS: the sets. ARGV: window in ms, a unique member, then one limit per key.
    /// Returns {1} when admitted, {0, ms until there is room} when not.
    static let script = """
        local t = redis.call('TIME'); local now = t[1] * 1000 + math.floor(t[2] / 1000)
        local window = tonumber(ARGV[1])
        local wait = 0
        for i, key in ipairs(KEYS) do
          redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
          if redis.call('ZCARD', key) >= tonumber(ARGV[i + 2]) then
            local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
            wait = math.max(wait, tonumber(oldest[2]) + window - now)
          end
        end
        if wait > 0 then return {0, wait} end
        for i, key in ipairs(KEYS) do
          redis.call('ZADD', key, now, ARGV[2])
          redis.call('PEXPIRE', key, window)
        end
        return {1}
        """

    /// Counts an upload (or reservation) against its owner and its address; 429 with `Retry-After` when over.
    func admitUpload(_ request: Request, context: MomentsRequestContext) async throws {
        var keys: [(String, Int)] = []
        if let owner = context.identity.owner, limits.uploadsPerOwner > 0 { keys.append(("owner:\(owner)", limits.uploadsPerOwner)) }
        if limits.uploadsPerIP > 0, let ip = clientAddress(request, context: context) { keys.append(("ip:\(ip)", limits.uploadsPerIP)) }
        try await admit(keys, what: "uploads", logger: context.logger)
    }

    /// Counts a device registration against its address (apart from its uploads).
    func admitRegistration(_ request: Request, context: MomentsRequestContext) async throws {
        guard limits.uploadsPerIP > 0, let ip = clientAddress(request, context: context) else { return }
        try await admit([("devices-ip:\(ip)", limits.uploadsPerIP)], what: "device registrations", logger: context.logger)
    }

    private func admit(_ keys: [(String, Int)], what: String, logger: Logger) async throws {
        guard !keys.isEmpty else { return }
        let reply: RedisValue
        do {
            reply = try await redis.eval(Self.script, keys: keys.map { "\(prefix):ratelimit:\($0.0)" },
                                         arguments: [String(limits.window.inMilliseconds), UUID().uuidString] + keys.map { String($0.1) })
        } catch {
            logger.warning("rate limit not checked: Redis did not answer", metadata: ["error": "\(error)"])
            return
        }
        guard let values = reply.array, values.first?.int == 0 else { return }
        let seconds = max(1, Int((Double(values.dropFirst().first?.int ?? 1000) / 1000).rounded(.up)))
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
