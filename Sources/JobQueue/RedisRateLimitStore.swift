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

    public func admit(_ keys: [RateLimitKey], window: Duration) async throws -> Duration? {
        guard !keys.isEmpty else { return nil }
        let reply = try await client.eval(
            Self.script, keys: keys.map { "\(prefix):\($0.name)" },
            arguments: [String(window.inMilliseconds), UUID().uuidString] + keys.map { String($0.limit) })
        guard let values = reply.array, values.first?.int == 0 else { return nil }
        return .milliseconds(max(1, values.dropFirst().first?.int ?? 1000))
    }
}
