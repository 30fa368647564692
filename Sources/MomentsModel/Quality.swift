/// Output quality of a highlight: bounds the long side of the rendered video.
public enum Quality: String, Sendable, Codable, CaseIterable {
    case high, medium, low

    /// The longest side, in pixels, a rendered highlight may have. Sources are never upscaled.
    public var maxLongSide: Int {
        switch self {
        case .high: 1920
        case .medium: 1280
        case .low: 854
        }
    }
}
