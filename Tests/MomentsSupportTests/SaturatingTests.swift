import MomentsModel
import MomentsSupport
import Testing

/// Timestamps and durations come from files: converting one to an integer must never trap.
@Suite("Saturating conversions")
struct SaturatingTests {
    @Test(
        "Out of range, infinite and NaN values are held to the range (0 for NaN); the rest round toward zero as Int(_:) does",
        arguments: [
            (1e30, Int.max), (-1e30, Int.min), (Double.infinity, Int.max), (-Double.infinity, Int.min),
            (Double.nan, 0), (0x1p63, Int.max), (-0x1p63, Int.min), (12.9, 12), (-12.9, -12), (0, 0),
        ])
    func conversions(value: Double, expected: Int) {
        #expect(Int(saturating: value) == expected)
        #expect(Int64(saturating: value) == Int64(expected))
    }
}
