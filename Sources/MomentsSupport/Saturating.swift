extension Int {
    /// `value` rounded toward zero, held to `Int`'s range, 0 for NaN. `Int(_:)` traps on a value
    /// out of range; timestamps and durations a file states can be anything, so every conversion
    /// of one goes through here.
    public init(saturating value: Double) {
        if value.isNaN { self = 0 } else if value >= 0x1p63 { self = .max } else if value < -0x1p63 { self = .min } else { self = Int(value) }
    }
}

extension Int64 {
    /// `value` rounded toward zero, held to `Int64`'s range, 0 for NaN (see `Int(saturating:)`).
    public init(saturating value: Double) {
        self = Int64(Int(saturating: value))
    }
}
