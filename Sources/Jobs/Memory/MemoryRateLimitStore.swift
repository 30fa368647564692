/// A `RateLimitStore` in memory (tests): the same sliding window as the Redis one.
public actor MemoryRateLimitStore: RateLimitStore {
    private var admitted: [String: [ContinuousClock.Instant]] = [:]

    public init() {}

    public func admit(_ keys: [RateLimitKey], window: Duration) -> RateLimitVerdict {
        precondition(!keys.isEmpty, "a request counts against at least one key")
        let now = ContinuousClock.now
        for key in keys { admitted[key.name] = (admitted[key.name] ?? []).filter { now - $0 < window } }
        // Refused: the fullest key's wait until its oldest request leaves the window.
        let waits = keys.compactMap { key in
            let recent = admitted[key.name]!
            return recent.count >= key.limit ? (key.limit, recent.first.map { $0 + window - now } ?? window) : nil
        }
        if let (limit, wait) = waits.max(by: { $0.1 < $1.1 }) {
            return RateLimitVerdict(admitted: false, limit: limit, remaining: 0, reset: wait)
        }
        for key in keys { admitted[key.name, default: []].append(now) }
        let verdicts = keys.map { key in
            let recent = admitted[key.name]!
            return RateLimitVerdict(admitted: true, limit: key.limit, remaining: key.limit - recent.count, reset: recent[0] + window - now)
        }
        return verdicts.dropFirst().reduce(verdicts[0], RateLimitVerdict.tightest)
    }
}
