import Foundation
import Highlights
import MediaSynth
import MomentsModel

/// One generated case of the whole pipeline: a source video described exactly enough to make it
/// (every cut, mark and timestamp known) and the settings a highlight of it is asked with.
///
/// Cases are drawn from a seed (`PipelineCase(seed:budget:)`), stored as JSON beside the fixtures
/// of failures they found, and replayed from that JSON.
public struct PipelineCase: Codable, Sendable, Equatable {
    public struct Scene: Codable, Sendable, Equatable {
        public var frames: Int
        /// `cut`, `dissolve`, `fade-black` or `fade-white` (how the scene begins; ignored for the first).
        public var transition: String
        public var transitionFrames: Int
        /// `still`, `pan`, `shaky` or `handheld`.
        public var camera: String
        /// 1 as painted, near 0 a dark shot.
        public var light: Double
        /// Out of focus: a blur radius in pixels (0: sharp).
        public var blur: Int
    }

    public var seed: UInt64

    // MARK: The source
    public var width: Int
    public var height: Int
    /// Stored pixel shape, width:height.
    public var pixelAspect: [Int]
    /// Whole frames per second the painter moves things by.
    public var frameRate: Int
    /// Timestamps at `frameRate` × 1000/1001.
    public var ntsc: Bool
    /// `constant`, `alternating` (0.75 and 1.25 of a frame) or `low-light` (runs at 30 and 20 fps).
    public var timing: String
    /// Runs of (frames, fps) for `low-light`.
    public var rateRuns: [[Int]]
    /// `h264` or `hevc`.
    public var codec: String
    public var bitDepth: Int
    /// 4:4:4 chroma (odd sizes need it).
    public var fullChroma: Bool
    public var gopFrames: Int
    public var openGOP: Bool
    public var bFrames: Int
    /// `mp4`, `mov`, `mkv` or `ts`.
    public var container: String
    public var rotation: Int
    /// `aac`, `none` or `short` (AAC that stops at `audioSeconds`).
    public var audio: String
    public var audioSeconds: Double?
    public var audioRate: Int
    /// Presentation time of the first picture and sample.
    public var startTime: Double
    public var scenes: [Scene]
    /// Frames with a flash and a click (the sync marks).
    public var marks: [Int]
    /// (start frame, frames) of stretches of fast motion and loud bursts.
    public var events: [[Int]]

    // MARK: The settings
    public var target: Double
    public var quality: String
    public var videoCodec: String
    public var aspect: String
    public var minSegment: Double?
    public var maxSegment: Double?
    public var maxSegments: Int?
    public var poster: Bool
    public var thumbnails: Bool
    /// `30` or `source`; nil in cases written before the choice existed, which kept the source's rate.
    public var fps: String?

    public var frameCount: Int { scenes.reduce(0) { $0 + $1.frames } }

    /// The file name the source is written to (its container decides the extension).
    public var sourceName: String {
        "source-\(String(seed, radix: 16)).\(["mov": "mov", "mkv": "mkv", "ts": "ts"][container] ?? "mp4")"
    }

    /// The source as the synthetic footage writer makes it.
    public var video: SyntheticVideo {
        var video = SyntheticVideo(
            width: width, height: height, frameRate: frameRate,
            scenes: scenes.enumerated().map { index, scene in
                var made = SyntheticVideo.Scene(
                    frames: scene.frames, camera: Self.camera(scene.camera, width: width),
                    transitionIn: Self.transition(scene.transition, frames: scene.transitionFrames),
                    toneHz: 200 + Double(index % 12) * 37)
                made.light = scene.light
                made.blur = scene.blur
                return made
            })
        video.ntscRate = ntsc
        video.variableFrameRate = timing == "alternating"
        video.rateRuns = timing == "low-light" ? rateRuns.map { SyntheticVideo.RateRun(frames: $0[0], rate: $0[1]) } : []
        video.videoCodec = codec == "hevc" ? "libx265" : "libx264"
        video.pixelFormat = (fullChroma ? "yuv444p" : "yuv420p") + (bitDepth == 10 ? "10le" : "")
        video.gopSize = gopFrames
        video.encoderOptions = encoderOptions
        video.container = ["mp4": "mp4", "mov": "mov", "mkv": "matroska", "ts": "mpegts"][container]
        video.rotation = rotation
        video.sampleAspectRatio = (pixelAspect[0], pixelAspect[1])
        video.audio = audio == "none" ? nil : .aac
        video.audioDuration = audio == "short" ? audioSeconds : nil
        video.audioSampleRate = audioRate
        video.startTime = startTime
        video.syncMarks = marks
        video.events = events.map { SyntheticVideo.Event(startFrame: $0[0], frames: $0[1]) }
        video.saturation = 0.5
        return video
    }

    /// The encoder's settings: GOP length, open or closed, B-frames, no keyframes of its own choosing.
    var encoderOptions: [String: String] {
        let gop = "keyint=\(gopFrames):min-keyint=\(gopFrames):scenecut=0:bframes=\(bFrames):open-gop=\(openGOP ? 1 : 0)"
        return codec == "hevc"
            ? ["preset": "ultrafast", "x265-params": gop + ":log-level=none"]
            : ["preset": "veryfast", "x264-params": gop]
    }

    /// What the highlight is asked for.
    public var settings: HighlightSettings {
        let choices = HighlightChoices(
            minSegment: minSegment, maxSegment: maxSegment, maxSegments: maxSegments,
            aspect: AspectRatio(rawValue: aspect) ?? .source,
            fps: fps.flatMap(FrameRateChoice.init(rawValue:)) ?? .source)
        return HighlightSettings(
            duration: target, quality: Quality(rawValue: quality) ?? .high,
            codec: VideoCodecChoice(rawValue: videoCodec) ?? .auto, choices: choices)
    }

    /// The source's length in seconds, from its first picture's time (as the writer stamps them).
    public var duration: Double { video.duration }

    /// One frame at the nominal rate, in seconds.
    public var frameInterval: Double { 1 / video.nominalRate }

    /// The longest gap between two frames (a low-light run's frame lasts longer than a nominal one).
    public var longestFrameInterval: Double {
        switch timing {
        case "alternating": 1.25 * frameInterval
        case "low-light": 1 / Double(rateRuns.map { $0[1] }.min() ?? frameRate)
        default: frameInterval
        }
    }

    static func camera(_ name: String, width: Int) -> SyntheticVideo.Camera {
        switch name {
        case "pan": .pan(pixelsPerFrame: max(1, Double(width) / 160))
        case "shaky": .shaky(amplitude: 3)
        case "handheld": .handheld(drift: 0.5, sway: 6)
        default: .still
        }
    }

    static func transition(_ name: String, frames: Int) -> SyntheticVideo.Transition {
        switch name {
        case "dissolve": .dissolve(frames: frames)
        case "fade-black": .fadeThroughBlack(frames: frames)
        case "fade-white": .fadeThroughWhite(frames: frames)
        default: .cut
        }
    }
}

extension PipelineCase: CustomStringConvertible {
    public var description: String { summary }

    /// A one-line summary for logs.
    public var summary: String {
        let rate = ntsc ? String(format: "%.3f", Double(frameRate) * 1000 / 1001) : "\(frameRate)"
        var parts = [
            "seed \(String(seed, radix: 16))", "\(width)×\(height)", "\(rate) fps \(timing)",
            "\(codec) \(bitDepth)-bit\(fullChroma ? " 4:4:4" : "")", "gop \(gopFrames)\(openGOP ? " open" : "") b\(bFrames)",
            container, String(format: "%.2f s", duration), "audio \(audio)",
        ]
        if rotation != 0 { parts.append("rot \(rotation)") }
        if pixelAspect != [1, 1] { parts.append("sar \(pixelAspect[0]):\(pixelAspect[1])") }
        if startTime != 0 { parts.append(String(format: "start %.2f", startTime)) }
        parts.append(String(format: "→ %.0f s %@ %@ %@", target, quality, videoCodec, aspect))
        if let minSegment { parts.append("min \(minSegment)") }
        if let maxSegment { parts.append("max \(maxSegment)") }
        if let maxSegments { parts.append("count \(maxSegments)") }
        if let fps, fps != FrameRateChoice.upTo30.rawValue { parts.append("fps \(fps)") }
        return parts.joined(separator: ", ")
    }
}
