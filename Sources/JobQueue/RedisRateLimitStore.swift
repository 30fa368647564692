import Foundation
import Jobs
import MomentsModel
import MomentsSupport

/// A `RateLimitStore` on Redis: each key a sorted set of the admitted requests' times (Redis's
/// own clock, so API nodes with skewed clocks agree), checked and counted in one script.
public struct RedisRateLimitStore: RateLimitStore {
    let client: RedisClient
    let prefix: String

    public init(client: RedisClient, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    /// KEYS: the sets. ARGV: window in ms, a unique member, then one limit per key.
    /// Returns {0, limit, ms until there is room} for the fullest key when refused, else
    /// {1, limit, remaining, ms until the oldest leaves the window} for the key with the least room.
    static let script = """
        local t = redis.call('TIME'); local now = t[1] * 1000 + math.floor(t[2] / 1000)
        local window = tonumber(ARGV[1])
        local wait, waitLimit = 0, 0
        for i, key in ipairs(KEYS) do
          redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
          local limit = tonumber(ARGV[i + 2])
          if redis.call('ZCARD', key) >= limit then
            local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
            local left = oldest[2] and tonumber(oldest[2]) + window - now or window
            if left >= wait then wait, waitLimit = math.max(left, 1), limit end
          end
        end
        if wait > 0 then return {0, waitLimit, wait} end
        local best
        for i, key in ipairs(KEYS) do
          redis.call('ZADD', key, now, ARGV[2])
          redis.call('PEXPIRE', key, window)
          local limit = tonumber(ARGV[i + 2])
          local remaining = limit - redis.call('ZCARD', key)
          local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
          local reset = tonumber(oldest[2]) + window - now
          if best == nil or remaining < best[3] or (remaining == best[3] and reset > best[4]) then
            best = {1, limit, remaining, reset}
          end
        end
        return best
        """

    public func admit(_ keys: [RateLimitKey], window: Duration) async throws -> RateLimitVerdict {
        let reply = try await client.eval(
            Self.script, keys: keys.map { "\(prefix):\($0.name)" },
            arguments: [String(window.inMilliseconds), UUID().uuidString] + keys.map { String($0.limit) })
        let values = (reply.array ?? []).map { $0.int ?? 0 }
        guard values.count >= 3 else { throw RateLimitReplyError(reply: "\(reply)") }
        if values[0] == 0 { return RateLimitVerdict(admitted: false, limit: values[1], remaining: 0, reset: .milliseconds(max(1, values[2]))) }
        guard values.count == 4 else { throw RateLimitReplyError(reply: "\(reply)") }
        return RateLimitVerdict(admitted: true, limit: values[1], remaining: max(0, values[2]), reset: .milliseconds(max(0, values[3])))
    }
}

/// The rate-limit script answered in a shape it never returns.
struct RateLimitReplyError: Error, CustomStringConvertible {
    var reply: String
    var description: String { "the rate-limit script answered \(reply)" }
}
