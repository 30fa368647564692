import MomentsModel
import MomentsSupport

/// The bounds the selector works within: the window lengths it tries, the shortest and longest a
/// segment may become, and how many segments there may be. `standard` is the engine's own
/// judgement; the user's `HighlightChoices` make others.
public struct SegmentRules: Sendable, Equatable {
    /// Candidate window lengths, seconds.
    var lengths: [Double]
    /// No segment is shrunk below this.
    var shortest: Double
    /// Segments grow up to this in the first fitting passes; in every pass when `capsEveryPass`.
    var longest: Double
    /// Whether `longest` is a promise (the user chose it) rather than a preference.
    var capsEveryPass: Bool
    /// At most this many segments.
    var count: Int?
    /// Whether `shortest` is a promise (the user chose it).
    var floorIsPromise = false

    public static let standard = SegmentRules(lengths: [2, 3, 4, 5, 6], shortest: 1.5, longest: 6, capsEveryPass: false, count: nil)

    init(lengths: [Double], shortest: Double, longest: Double, capsEveryPass: Bool, count: Int?, floorIsPromise: Bool = false) {
        self.lengths = lengths
        self.shortest = shortest
        self.longest = longest
        self.capsEveryPass = capsEveryPass
        self.count = count
        self.floorIsPromise = floorIsPromise
    }

    /// The rules for `choices` and a highlight of `target` seconds. Without a `max_segment`, a
    /// `max_segments` lets segments grow to `target / max_segments` so the target stays reachable.
    public init(_ choices: HighlightChoices, target: Double) {
        guard choices.minSegment != nil || choices.maxSegment != nil || choices.maxSegments != nil else {
            self = .standard
            return
        }
        let low = choices.minSegment ?? min(2, choices.maxSegment ?? 2)
        let high = choices.maxSegment ?? max(6, low, choices.maxSegments.map { target / Double($0) } ?? 0)
        var lengths = [low]
        if high - low > 0.01 {
            let steps = min(5, Int(saturating: (high - low) / 0.5))
            lengths = (0...max(1, steps)).map { low + (high - low) * Double($0) / Double(max(1, steps)) }
        }
        self.init(
            lengths: lengths, shortest: choices.minSegment ?? min(1.5, high), longest: high,
            capsEveryPass: choices.maxSegment != nil, count: choices.maxSegments, floorIsPromise: choices.minSegment != nil)
    }

    /// How far a segment's length may miss the rules: a frame of `analysis`'s source, whichever
    /// grid the segments land on (not a fixed 50 ms: that is two and a half frames at 50 fps).
    static func slack(for analysis: Analysis) -> Double { analysis.info.nominalFrameInterval * 1.01 + 1e-6 }

    /// Whether `segments` keep the rules, a frame's rounding (`slack`) allowed on each length.
    func admits(_ segments: [Segment], slack: Double) -> Bool {
        if self == .standard { return true }
        if let count, segments.count > count { return false }
        return segments.allSatisfy {
            (!floorIsPromise || $0.duration >= shortest - slack) && (!capsEveryPass || $0.duration <= longest + slack)
        }
    }
}
