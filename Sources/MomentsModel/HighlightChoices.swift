import Foundation

/// The shape of the highlight's frame. Stored with the job and sent by clients; never rename a case.
public enum AspectRatio: String, Sendable, Codable, CaseIterable {
    /// The source's own shape.
    case source
    /// Portrait: Reels, Shorts, TikTok.
    case portrait = "9:16"
    case square = "1:1"
    /// Instagram's portrait feed post.
    case feed = "4:5"
    case landscape = "16:9"

    /// Width over height; nil for `source`.
    public var ratio: Double? {
        switch self {
        case .source: nil
        case .portrait: 9.0 / 16
        case .square: 1
        case .feed: 4.0 / 5
        case .landscape: 16.0 / 9
        }
    }
}

/// How many pictures a second the highlight shows. Stored with the job and sent by clients; never
/// rename a case.
public enum FrameRateChoice: String, Sendable, Codable, CaseIterable {
    /// At most about 30: a faster source shows every second picture (60 → 30, 59.94 → 29.97,
    /// 50 → 25), or every third or fourth (120 → 30); a source of up to 33 keeps its own.
    case upTo30 = "30"
    /// The source's own rate, whatever it is.
    case source

    /// Above this many pictures a second, `upTo30` leaves pictures out.
    public static let fastestKept = 33.0
    /// What `upTo30` leaves pictures out down to: 31, not 30, so a 60 fps clip whose count of
    /// pictures over its length says 60.4 still halves.
    public static let fastestOutput = 31.0

    /// Every how many pictures of a source of `sourceRate` pictures a second the highlight shows
    /// one: 1, or under `upTo30` the smallest step that brings a source faster than `fastestKept`
    /// to `fastestOutput` or under.
    public func pictureStep(sourceRate: Double) -> Int {
        guard self == .upTo30, sourceRate.isFinite, sourceRate > Self.fastestKept else { return 1 }
        // Held under a billion: a file may state any rate, and `Int(_:)` traps past its range.
        return max(2, Int(min((sourceRate / Self.fastestOutput).rounded(.up), 1e9)))
    }
}

/// What the person asking for a highlight may choose besides its length and quality: the lengths of
/// its segments, how many there are, the frame's shape and its rate. Cloudinary's preview API offers
/// the same segment choices. Nil means the engine's own judgement.
public struct HighlightChoices: Sendable, Equatable, Codable {
    /// No segment shorter than this, in seconds.
    public var minSegment: Double?
    /// No segment longer than this, in seconds.
    public var maxSegment: Double?
    /// At most this many segments.
    public var maxSegments: Int?
    public var aspect: AspectRatio
    public var fps: FrameRateChoice

    public init(
        minSegment: Double? = nil, maxSegment: Double? = nil, maxSegments: Int? = nil, aspect: AspectRatio = .source,
        fps: FrameRateChoice = .upTo30
    ) {
        self.minSegment = minSegment
        self.maxSegment = maxSegment
        self.maxSegments = maxSegments
        self.aspect = aspect
        self.fps = fps
    }

    enum CodingKeys: String, CodingKey {
        case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect, fps
    }

    /// Choices written before `fps` existed read as its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            minSegment: try c.decodeIfPresent(Double.self, forKey: .minSegment),
            maxSegment: try c.decodeIfPresent(Double.self, forKey: .maxSegment),
            maxSegments: try c.decodeIfPresent(Int.self, forKey: .maxSegments),
            aspect: try c.decodeIfPresent(AspectRatio.self, forKey: .aspect) ?? .source,
            fps: try c.decodeIfPresent(FrameRateChoice.self, forKey: .fps) ?? .upTo30)
    }

    /// Segment lengths that may be asked for, in seconds.
    public static let segmentLengths = 1.0...60.0
    /// Segment counts that may be asked for.
    public static let segmentCounts = 1...60

    /// A choice that cannot be honoured: the setting's name (the code's subject) and a sentence.
    public struct Invalid: Error, Sendable, Equatable {
        /// `min_segment`, `max_segment`, `max_segments`, `aspect`, `fps`, or `segments` for a contradiction between them.
        public var field: String
        public var message: String
    }

    /// Reads the choices from text settings (form fields, JSON strings, command-line options): each
    /// is absent, empty (the default), or valid; then checks them against each other and
    /// `targetDuration`.
    public static func parse(
        minSegment: String?, maxSegment: String?, maxSegments: String?, aspect: String?, fps: String? = nil,
        targetDuration: Double, quality: Quality = .high
    ) throws(Invalid) -> HighlightChoices {
        func text(_ value: String?) -> String? {
            guard let value = value?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
            return value
        }
        func seconds(_ value: String?, field: String) throws(Invalid) -> Double? {
            guard let value = text(value) else { return nil }
            guard let number = Double(value), number.isFinite, segmentLengths.contains(number) else {
                throw Invalid(
                    field: field,
                    message: "\(field) must be a number of seconds from \(Int(segmentLengths.lowerBound)) "
                        + "to \(Int(segmentLengths.upperBound)).")
            }
            return number
        }
        var choices = HighlightChoices()
        choices.minSegment = try seconds(minSegment, field: "min_segment")
        choices.maxSegment = try seconds(maxSegment, field: "max_segment")
        if let value = text(maxSegments) {
            guard let count = Int(value), segmentCounts.contains(count) else {
                throw Invalid(
                    field: "max_segments",
                    message: "max_segments must be a whole number from \(segmentCounts.lowerBound) "
                        + "to \(segmentCounts.upperBound).")
            }
            choices.maxSegments = count
        }
        if let value = text(aspect) {
            guard let ratio = AspectRatio(rawValue: value.lowercased()) else {
                throw Invalid(
                    field: "aspect",
                    message: "aspect must be one of "
                        + AspectRatio.allCases.map(\.rawValue).joined(separator: ", ") + ".")
            }
            choices.aspect = ratio
        }
        if let value = text(fps) {
            guard let rate = FrameRateChoice(rawValue: value.lowercased()) else {
                throw Invalid(
                    field: "fps",
                    message: "fps must be 30 (at most about 30 pictures a second, the default) or source "
                        + "(the video's own rate).")
            }
            choices.fps = rate
        }
        try choices.fit(quality, fpsGiven: text(fps) != nil)
        try choices.check(targetDuration: targetDuration)
        return choices
    }

    /// `quality=original` keeps the source's frame rate: `fps` becomes `source`, and a request for
    /// `fps=30` with it (`fpsGiven`) is a contradiction.
    public mutating func fit(_ quality: Quality, fpsGiven: Bool) throws(Invalid) {
        guard quality == .original else { return }
        if fpsGiven && fps == .upTo30 {
            throw Invalid(field: "fps", message: "quality=original keeps the video's own frame rate: leave fps out or send fps=source.")
        }
        fps = .source
    }

    /// Checks the choices against each other and the highlight's length.
    public func check(targetDuration: Double) throws(Invalid) {
        if let minSegment, let maxSegment, minSegment > maxSegment {
            throw Invalid(
                field: "segments",
                message: "min_segment (\(Self.format(minSegment)) s) is longer than "
                    + "max_segment (\(Self.format(maxSegment)) s).")
        }
        if let minSegment, minSegment > targetDuration {
            throw Invalid(
                field: "segments",
                message: "min_segment (\(Self.format(minSegment)) s) is longer than the whole "
                    + "highlight (target_duration \(Self.format(targetDuration)) s).")
        }
        if let maxSegments, let maxSegment, Double(maxSegments) * maxSegment < targetDuration - 0.5 {
            throw Invalid(
                field: "segments",
                message: "\(maxSegments) segment\(maxSegments == 1 ? "" : "s") of at most "
                    + "\(Self.format(maxSegment)) s cannot fill a \(Self.format(targetDuration)) s highlight: allow more or longer "
                    + "segments, or ask for a shorter highlight.")
        }
    }

    /// Whether every choice is the default.
    public var isDefault: Bool { self == HighlightChoices() }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
