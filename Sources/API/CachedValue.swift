/// A value that is expensive to find out (readiness, the shared stores' metrics), worked out at
/// most once per `maxAge` however many requests ask: callers within it share the last answer, and
/// callers while it is being worked out wait for that one answer instead of starting another.
actor CachedValue<Value: Sendable> {
    let maxAge: Duration
    private let compute: @Sendable () async -> Value
    private var stored: (value: Value, at: ContinuousClock.Instant)?
    private var pending: Task<Value, Never>?

    init(maxAge: Duration, compute: @escaping @Sendable () async -> Value) {
        self.maxAge = maxAge
        self.compute = compute
    }

    /// The last answer if it is younger than `maxAge`, else a new one (shared with every caller waiting for it).
    var value: Value {
        get async {
            if let stored, stored.at.duration(to: .now) < maxAge { return stored.value }
            if let pending { return await pending.value }
            let task = Task { [compute] in await compute() }
            pending = task
            let value = await task.value
            stored = (value, .now)
            pending = nil
            return value
        }
    }

    /// Forgets the last answer: the next caller works it out afresh (after a change made here).
    func invalidate() { stored = nil }
}
