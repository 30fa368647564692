import ArgumentParser
import MomentsModel

/// The user's segment and framing choices, as `highlight` and `analyze` take them; checked by the
/// same rules as the API's fields.
struct ChoiceOptions: ParsableArguments {
    @Option(help: "No segment shorter than this many seconds.") var minSegment: String?
    @Option(help: "No segment longer than this many seconds.") var maxSegment: String?
    @Option(help: "At most this many segments.") var maxSegments: String?
    @Option(help: "The frame's shape: source, 9:16, 1:1, 4:5 or 16:9 (a crop that follows the action).") var aspect: String?
    @Option(help: "Pictures a second: 30 (the default: a faster video shows every second picture, 60 → 30) or source (its own rate).")
    var fps: String?

    func choices(target: Double, quality: Quality = .high) throws -> HighlightChoices {
        do {
            return try HighlightChoices.parse(
                minSegment: minSegment, maxSegment: maxSegment, maxSegments: maxSegments,
                aspect: aspect, fps: fps, targetDuration: target, quality: quality)
        } catch {
            throw ValidationError(
                error.message.replacingOccurrences(of: "min_segment", with: "--min-segment")
                    .replacingOccurrences(of: "max_segments", with: "--max-segments")
                    .replacingOccurrences(of: "max_segment", with: "--max-segment")
                    .replacingOccurrences(of: "target_duration", with: "--duration")
                    .replacingOccurrences(of: "aspect must", with: "--aspect must")
                    .replacingOccurrences(of: "fps must", with: "--fps must")
                    .replacingOccurrences(of: "quality=original", with: "--quality original")
                    .replacingOccurrences(of: "leave fps out or send fps=source", with: "leave --fps out or pass --fps source"))
        }
    }
}
