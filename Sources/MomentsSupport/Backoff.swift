/// Exponential backoff: waits of `first`, then twice as long each time, never more than `cap`.
/// The one retry policy of Moments: the worker's slots, the job service's PostgreSQL retries, the
/// Redis client's reconnects, S3 requests, webhook deliveries, job retries and the client SDK.
public struct Backoff: Sendable {
    public let first: Duration
    public let cap: Duration
    /// The wait the next `advance()` answers.
    private var current: Duration

    public init(first: Duration, cap: Duration) {
        self.first = first
        self.cap = max(first, cap)
        current = first
    }

    /// The wait before the next try; the one after it is twice as long (up to `cap`).
    public mutating func advance() -> Duration {
        defer { current = min(current * 2, cap) }
        return current
    }

    /// Back to `first` (after a success).
    public mutating func reset() { current = first }

    /// The wait after the `attempt`-th try failed (1-based) when tries are counted rather than
    /// timed: first·2^(attempt−1), at most `cap`; with `jitter`, times a random factor in [0.5, 1),
    /// so that many clients that failed together do not retry together.
    public static func delay(afterAttempt attempt: Int, first: Duration, cap: Duration, jitter: Bool = true) -> Duration {
        let ceiling = min(first * (1 << min(max(attempt - 1, 0), 30)), max(first, cap))
        return jitter ? ceiling * Double.random(in: 0.5..<1.0) : ceiling
    }

    /// Runs `body` until it succeeds, retrying (after the backoff's waits) the errors `retryable`
    /// accepts for as long as the next try would still start within `window`. The last error is
    /// thrown; so is any error `retryable` refuses, and every error once the task is cancelled.
    /// `onRetry` hears each error that is retried and the wait before the next try.
    public static func retrying<T, Failure: Error>(
        for window: Duration, first: Duration = .milliseconds(100), cap: Duration = .seconds(3),
        when retryable: (Failure) -> Bool, onRetry: (Failure, Duration) -> Void = { _, _ in },
        _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        var backoff = Backoff(first: first, cap: cap)
        let deadline = ContinuousClock.now + window
        while true {
            do {
                return try await body()
            } catch {
                let wait = backoff.advance()
                guard retryable(error), !Task.isCancelled, ContinuousClock.now + wait < deadline else { throw error }
                onRetry(error, wait)
                let failure = error
                // Cancelled while waiting: the caller hears the last error, not the cancellation.
                do { try await Task.sleep(for: wait) } catch { throw failure }
            }
        }
    }
}
