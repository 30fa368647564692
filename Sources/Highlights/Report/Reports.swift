import Foundation
import Media
import MomentsModel
import MomentsSupport

/// How reports are written: pretty, keys sorted, so two runs diff cleanly.
public enum ReportJSON {
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// `moments analyze --json`: everything the analysis found, without rendering.
public struct AnalysisReport: Sendable, Codable {
    public var input: MediaInfo
    public var scenes: [SceneChange]
    public var shots: [Shot]
    public var seconds: [SecondFeatures]
    /// Where someone speaks.
    public var speech: [SpeechSpan]
    public var candidates: [Segment]
    public var selected: [Segment]
    public var decodedFrames: Int
    public var totalFrames: Int
    /// Why faces were not looked for (the face cascade is missing); absent when they were.
    public var facesUnavailable: String?

    enum CodingKeys: String, CodingKey {
        case input, scenes, shots, seconds, speech, candidates, selected
        case decodedFrames = "decoded_frames", totalFrames = "total_frames", facesUnavailable = "faces_unavailable"
    }

    public init(analysis: Analysis, selection: Selection) {
        input = analysis.info
        scenes = analysis.changes
        shots = analysis.shots
        seconds = analysis.seconds
        speech = analysis.speech
        candidates = selection.candidates
        selected = selection.segments
        decodedFrames = analysis.decodedFrames
        totalFrames = analysis.totalFrames
        facesUnavailable = analysis.facesUnavailable
    }

    /// A readable summary for a terminal.
    public var text: String {
        var lines: [String] = []
        let i = input
        lines.append(
            String(
                format: "%@  %.2f s  %d×%d (shown %d×%d, rotation %d°)  %.2f fps  %@ %d-bit",
                i.container, i.duration, i.width, i.height, i.displayWidth, i.displayHeight, i.rotation,
                i.frameRate, i.videoCodec, i.bitDepth))
        lines.append("audio: " + (i.audioCodec.map { "\($0) \(i.audioSampleRate ?? 0) Hz, \(i.audioChannels ?? 0) ch" } ?? "none"))
        lines.append("decoded \(decodedFrames) of \(totalFrames) frames")
        lines.append("scene changes (\(scenes.count)):")
        for s in scenes { lines.append(String(format: "  %8.3f s  %@", s.time, s.kind.rawValue)) }
        lines.append("speech (\(speech.count) spans):")
        for s in speech { lines.append(String(format: "  %8.3f – %8.3f", s.start, s.end)) }
        if let facesUnavailable { lines.append(facesUnavailable) }
        lines.append("per second: time  score  motion  camera  shake  loudness  excitement  onsets  brightness  sharpness  faces")
        for f in seconds {
            let faces = f.faces > 0 ? String(format: "  %d (%.0f%%)", f.faces, f.faceSize * 100) : ""
            lines.append(
                String(
                    format: "  %5.0f  %.2f  %6.2f  %6.2f  %5.2f  %7.1f  %6.2f  %3d  %6.1f  %5.2f%@%@",
                    f.time, f.score, f.motion, f.cameraMotion, f.shake, f.loudness, f.excitement, f.onsets,
                    f.brightness, f.sharpness, faces, f.isStatic ? "  static" : ""))
        }
        lines.append("best candidates:")
        for c in candidates.prefix(10) { lines.append(String(format: "  %8.3f – %8.3f  score %.3f", c.start, c.end, c.score)) }
        lines.append("selected:")
        for c in selected {
            lines.append(String(format: "  %8.3f – %8.3f  score %.3f  %@", c.start, c.end, c.score, c.reasons.joined(separator: "; ")))
        }
        return lines.joined(separator: "\n")
    }
}

/// `moments highlight --report`: what went in, what was chosen and why, what came out, how fast.
public struct HighlightReport: Sendable, Codable {
    public struct Settings: Sendable, Codable {
        public var targetDuration: Double
        public var quality: String
        public var codec: String
        public var minSegment: Double?
        public var maxSegment: Double?
        public var maxSegments: Int?
        public var aspect: String
        /// `30` or `source`.
        public var fps: String
        enum CodingKeys: String, CodingKey {
            case targetDuration = "target_duration", quality, codec
            case minSegment = "min_segment", maxSegment = "max_segment", maxSegments = "max_segments", aspect, fps
        }
    }

    public struct Output: Sendable, Codable {
        public var duration: Double
        public var width: Int
        public var height: Int
        public var videoCodec: String
        public var audioCodec: String
        public var fileSize: Int64
        public var silentAudio: Bool
        /// Pictures a second: the source's, or the share of it `fps=30` shows.
        public var frameRate: Double
        enum CodingKeys: String, CodingKey {
            case duration, width, height, videoCodec = "video_codec", audioCodec = "audio_codec"
            case fileSize = "file_size", silentAudio = "silent_audio", frameRate = "frame_rate"
        }
    }

    /// How the video was made: copied or encoded, why, how far keyframes moved each segment's
    /// edges, which of the source's pictures it shows (every `picture_step`-th), and how many
    /// it never decoded (`skipped_pictures`: non-reference pictures it does not show, before a
    /// segment or left out by `fps=30`).
    public struct Render: Sendable, Codable {
        public var mode: RenderMode
        public var reason: String
        public var edgeMoves: [EdgeMove]
        public var pictureStep: Int
        public var skippedPictures: Int
        enum CodingKeys: String, CodingKey {
            case mode, reason, edgeMoves = "edge_moves", pictureStep = "picture_step", skippedPictures = "skipped_pictures"
        }
    }

    public struct Timings: Sendable, Codable {
        public var analysis: Double
        public var selection: Double
        public var render: Double
        public var total: Double
    }

    /// The poster and the thumbnail strip, when asked for: which source times they show.
    public struct Stills: Sendable, Codable {
        /// Height of each picture in the thumbnail strip (its width follows the picture's shape).
        public static let thumbnailHeight = 180
        /// The widest a thumbnail is (a panorama's are squeezed to it), so the strip stays a JPEG.
        public static let widestThumbnail = 4 * thumbnailHeight

        public var posterTime: Double
        public var posterWidth: Int
        public var posterHeight: Int
        /// One per segment, in order.
        public var thumbnailTimes: [Double]
        enum CodingKeys: String, CodingKey {
            case posterTime = "poster_time", posterWidth = "poster_width", posterHeight = "poster_height"
            case thumbnailTimes = "thumbnail_times"
        }
    }

    /// The crop of a highlight in another shape than its source's: the window's size and where it
    /// was at each planned moment, in the upright picture's pixels (source resolution).
    public struct Reframe: Sendable, Codable {
        public struct Point: Sendable, Codable, Equatable {
            /// Source seconds.
            public var time: Double
            public var x: Int
            public var y: Int
        }
        public var aspect: String
        public var width: Int
        public var height: Int
        public var path: [Point]
    }

    public var input: MediaInfo
    public var settings: Settings
    public var scenes: [SceneChange]
    public var segments: [Segment]
    public var output: Output
    public var render: Render
    public var timings: Timings
    /// Source seconds processed per second of wall time, end to end.
    public var realTimeFactor: Double
    public var analysisRealTimeFactor: Double
    public var decodedFrames: Int
    public var totalFrames: Int
    public var stills: Stills? = nil
    /// Where the source has speech: how the edges were kept out of it.
    public var speech: SpeechEdits? = nil
    public var reframe: Reframe? = nil
    /// The soundtrack, when there is one: where it starts, where the cuts fell on it, how it was mixed.
    public var music: MusicReport? = nil

    enum CodingKeys: String, CodingKey {
        case input, settings, scenes, segments, output, render, timings, stills, speech, reframe, music
        case realTimeFactor = "real_time_factor", analysisRealTimeFactor = "analysis_real_time_factor"
        case decodedFrames = "decoded_frames", totalFrames = "total_frames"
    }
}
