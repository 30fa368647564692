/// Sliding-window counters shared by every API node (Redis in production, `MemoryRateLimitStore`
/// in tests).
public protocol RateLimitStore: Sendable {
    /// Admits one request if every key has had fewer than its limit within `window`, and then
    /// counts it against all of them, as one step. Answers nil when admitted, else how long until
    /// the fullest key has room.
    func admit(_ keys: [RateLimitKey], window: Duration) async throws -> Duration?
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
