/// A `RateLimitStore` in memory (tests): the same sliding window as the Redis one.
public actor MemoryRateLimitStore: RateLimitStore {
    private var admitted: [String: [ContinuousClock.Instant]] = [:]

    public init() {}

    public func admit(_ keys: [RateLimitKey], window: Duration) -> Duration? {
        let now = ContinuousClock.now
        var wait = Duration.zero
        for key in keys {
            let recent = (admitted[key.name] ?? []).filter { now - $0 < window }
            admitted[key.name] = recent
            if recent.count >= key.limit, let oldest = recent.first { wait = max(wait, oldest + window - now) }
        }
        if wait > .zero { return wait }
        for key in keys { admitted[key.name, default: []].append(now) }
        return nil
    }
}
