/// Output quality of a highlight: bounds the long side of the rendered video. `original` keeps the
/// source's size, frame rate and HDR: its own H.264 or HEVC copied between keyframes wherever it
/// can be, else encoded at the source's size.
public enum Quality: String, Sendable, Codable, CaseIterable {
    case high, medium, low, original

    /// The longest side, in pixels, a rendered highlight may have. Sources are never upscaled.
    public var maxLongSide: Int {
        switch self {
        case .high: 1920
        case .medium: 1280
        case .low: 854
        case .original: 7680  // the largest source accepted (8K)
        }
    }

    /// The quality names as a sentence lists them: "high, medium, low or original".
    public static var names: String {
        allCases.dropLast().map(\.rawValue).joined(separator: ", ") + " or " + allCases.last!.rawValue
    }
}
