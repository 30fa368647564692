/// Sliding-window counters shared by every API node (Redis in production, `MemoryRateLimitStore`
/// in tests).
public protocol RateLimitStore: Sendable {
    /// Admits one request if every key has had fewer than its limit within `window`, and then
    /// counts it against all of them, as one step. `keys` is not empty.
    func admit(_ keys: [RateLimitKey], window: Duration) async throws -> RateLimitVerdict
}

/// A rate limit's answer, as `RateLimit-Limit`, `-Remaining` and `-Reset` state it: of the keys a
/// request counts against, the one with the least room.
public struct RateLimitVerdict: Sendable, Equatable {
    /// Whether the request was admitted (and counted).
    public var admitted: Bool
    /// The key's limit per window.
    public var limit: Int
    /// The requests it still has room for, this one counted (0 when refused).
    public var remaining: Int
    /// How long until its oldest request leaves the window and makes room: when refused, the wait
    /// until the fullest key has room.
    public var reset: Duration

    public init(admitted: Bool, limit: Int, remaining: Int, reset: Duration) {
        self.admitted = admitted
        self.limit = limit
        self.remaining = remaining
        self.reset = reset
    }

    /// The key with less room of two: fewer remaining, or as few and longer to wait.
    public static func tightest(_ a: RateLimitVerdict, _ b: RateLimitVerdict) -> RateLimitVerdict {
        if a.remaining != b.remaining { return a.remaining < b.remaining ? a : b }
        return a.reset >= b.reset ? a : b
    }
}

/// One counter a request is counted against, and how many it holds per window.
public struct RateLimitKey: Sendable, Equatable {
    public var name: String
    public var limit: Int

    public init(_ name: String, limit: Int) {
        self.name = name
        self.limit = limit
    }
}
