import Media
import MomentsSupport

/// Features of one second of video, each on a scale that means something on its own.
public struct SecondFeatures: Sendable, Codable, Equatable {
    public var time: Double
    /// Movement in the scene, % of picture width per second (camera motion removed).
    public var motion: Double
    /// Camera movement (pan, tilt), % of width per second.
    public var cameraMotion: Double
    /// Erratic camera movement (shake), % of width per second.
    public var shake: Double
    /// Picture change per frame (0…255 content scale).
    public var activity: Double
    /// Compressed bits this second relative to the video's median second.
    public var bitrateRatio: Double
    /// Mean loudness, dBFS (−90 for silence).
    public var loudness: Double
    /// Loudness relative to this video's own baseline (robust z-score).
    public var excitement: Double
    public var onsets: Int
    /// Share of the second in which someone speaks (0…1).
    public var speech: Double
    /// Mean luma (16 black … 235 white).
    public var brightness: Double
    /// Sharpness relative to the video's median (1 typical; below ~0.35 blurred).
    public var sharpness: Double
    /// Nothing moves (frozen or static picture).
    public var isStatic: Bool
    /// Faces seen in the second's picture, and the largest one's side as a share of the picture's
    /// shorter side (0 without faces).
    public var faces: Int = 0
    public var faceSize: Double = 0
    /// How clearly the second shows a face (0…1): large, near the centre, sharp.
    var faceClarity: Double = 0
    /// Combined interest score, 0…1.
    public var score: Double

    enum CodingKeys: String, CodingKey {
        case time, motion, cameraMotion = "camera_motion", shake, activity, bitrateRatio = "bitrate_ratio"
        case loudness, excitement, onsets, speech, brightness, sharpness, isStatic = "static", faces, faceSize = "face_size", score
    }

    /// Whether the second is worth showing at all.
    public var isUsable: Bool { brightness >= 28 && brightness <= 232 && sharpness >= 0.3 && !isStatic }
}

/// A continuous stretch between two scene changes.
public struct Shot: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    public var duration: Double { end - start }
}

/// Everything the analysis pass learned, from which segments are chosen.
public struct Analysis: Sendable {
    public var info: MediaInfo
    /// Source timestamp (seconds) of the first frame; every other time here is relative to it.
    public var origin: Double
    public var changes: [SceneChange]
    public var shots: [Shot]
    public var seconds: [SecondFeatures]
    /// Where someone speaks, in order.
    public var speech: [SpeechSpan]
    /// Presentation times of every video frame, sorted.
    public var frameTimes: [Double]
    /// Every video packet in decode order (timestamps, sizes, picture kinds), for copying ranges.
    public var packets: PacketIndex
    /// Visual signature per second (from the nearest keyframe), for diversity.
    var signatures: [[Float]]
    public var decodedFrames: Int
    public var totalFrames: Int
    /// The faces of each second's picture (where they are, never what they look like), kept in
    /// memory for reframing and the poster; the report gives only their count and size.
    var faces: [[FaceBox]] = []
    /// Whether faces were looked for: nil when they were, else why not.
    public var facesUnavailable: String? = nil

    /// The seconds that overlap `start..<end` (`seconds[i]` covers `i..<i+1`).
    func seconds(overlapping start: Double, _ end: Double) -> ArraySlice<SecondFeatures> {
        let first = max(0, Int(saturating: start.rounded(.down)))
        let last = min(seconds.count, Int(saturating: end.rounded(.up)))
        return first < last ? seconds[first..<last] : []
    }
}

extension [Double] {
    /// The index of the first of these times (sorted, seconds) at or after `time`, a microsecond's
    /// rounding allowed; `count` when every one is earlier.
    func firstIndex(atOrAfter time: Double) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < time - 1e-6 { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
