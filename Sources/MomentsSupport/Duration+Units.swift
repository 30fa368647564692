extension Duration {
    /// Whole and fractional seconds (for SQL intervals, rates and reports).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole milliseconds, never negative (for Redis and socket timeouts).
    public var inMilliseconds: Int {
        max(0, Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000))
    }
}
