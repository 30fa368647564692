import Foundation

/// A highlight as an editor's timeline: the selected stretches of one source, back to back, ready
/// for Resolve, Final Cut or Premiere to open and refine. Written as a CMX 3600 EDL, an FCPXML 1.10
/// document or an OpenTimelineIO file (`TimelineFormat`).
///
/// Every time is a whole frame of the source's rate: a clip starts at the source frame shown at its
/// start time and lasts as many frames as fit between its start and end. When the camera recorded
/// a start timecode, the source times are counted from it, as editors match media by timecode.
public struct EditTimeline: Sendable, Equatable {
    /// A stretch of the source, in seconds from its first frame.
    public struct Clip: Sendable, Equatable {
        public var start: Double
        public var end: Double

        public init(start: Double, end: Double) {
            self.start = start
            self.end = end
        }
    }

    /// The timeline's (project's) name.
    public var name: String
    /// The source's file name, as the editor's bin shows it.
    public var sourceName: String
    /// Where the source is (a `file://` URL, or a bare file name the editor relinks).
    public var sourceURL: String
    public var frameRate: FrameRate
    /// The source's length in seconds.
    public var sourceDuration: Double
    /// The camera's timecode at the source's first frame (`HH:MM:SS:FF`, `;` when drop-frame).
    public var startTimecode: String?
    public var hasAudio: Bool
    public var width: Int?
    public var height: Int?
    public var clips: [Clip]

    public init(
        name: String, sourceName: String, sourceURL: String, frameRate: Double, sourceDuration: Double,
        startTimecode: String? = nil, hasAudio: Bool = true, width: Int? = nil, height: Int? = nil, clips: [Clip]
    ) {
        self.name = name
        self.sourceName = sourceName
        self.sourceURL = sourceURL
        self.frameRate = FrameRate(frameRate)
        self.sourceDuration = sourceDuration
        self.startTimecode = startTimecode
        self.hasAudio = hasAudio
        self.width = width
        self.height = height
        self.clips = clips
    }

    /// The timeline of a highlight of the file at `source` (a file URL): named after the file and
    /// referring to it by its URL, as `moments highlight --timeline` writes it beside the file.
    public init(
        highlightOf source: URL, frameRate: Double, sourceDuration: Double, startTimecode: String?, hasAudio: Bool,
        width: Int?, height: Int?, clips: [Clip]
    ) {
        let url = source.standardizedFileURL
        self.init(
            name: "\(url.deletingPathExtension().lastPathComponent) highlight", sourceName: url.lastPathComponent,
            sourceURL: url.absoluteString, frameRate: frameRate, sourceDuration: sourceDuration, startTimecode: startTimecode,
            hasAudio: hasAudio, width: width, height: height, clips: clips)
    }

    /// Each clip in whole frames: its first source frame (counted from the start timecode) and length.
    var frames: [(source: Int, length: Int)] {
        clips.map { clip in
            let first = frameRate.frames(clip.start)
            return (timecodeStart + first, max(1, frameRate.frames(clip.end) - first))
        }
    }

    /// The frame number of the start timecode (0 without one).
    var timecodeStart: Int { startTimecode.flatMap { frameRate.frames(timecode: $0) } ?? 0 }

    /// Whether timecodes are written drop-frame (the camera's were, at 29.97 or 59.94).
    var dropFrame: Bool { frameRate.allowsDropFrame && startTimecode?.contains(";") == true }

    /// The source's length in whole frames.
    var sourceFrames: Int { max(1, frameRate.frames(sourceDuration)) }

    public func render(_ format: TimelineFormat) -> String {
        switch format {
        case .edl: edl()
        case .fcpxml: fcpxml()
        case .otio: otio()
        }
    }
}

/// The file formats a timeline is written in.
public enum TimelineFormat: String, Sendable, CaseIterable {
    /// CMX 3600 EDL: every editor reads it (Resolve, Premiere, Avid, Final Cut through a converter).
    case edl
    /// Final Cut Pro's XML, version 1.10.
    case fcpxml
    /// OpenTimelineIO's JSON (Resolve 18.5+, Premiere through its plug-in, OTIO's own tools).
    case otio

    public var fileExtension: String { rawValue }

    public var contentType: String {
        switch self {
        case .edl: "text/plain; charset=utf-8"
        case .fcpxml: "application/xml; charset=utf-8"
        case .otio: "application/json"
        }
    }
}

/// A frame rate as editors write it: the exact rational (30000/1001 for 29.97) and the whole
/// number of frames a timecode second counts.
public struct FrameRate: Sendable, Equatable {
    /// Frames per second is `numerator / denominator`.
    public var numerator: Int
    public var denominator: Int

    /// The rate of `fps`: the NTSC rates (23.976, 29.97, 59.94, 119.88) exactly, anything else
    /// rounded to whole frames per second (phones' variable rates average just off them); 30 when unknown.
    public init(_ fps: Double) {
        guard fps.isFinite, fps > 0 else {
            (numerator, denominator) = (30, 1)
            return
        }
        for whole in [24, 30, 48, 60, 120, 240] where abs(fps - Double(whole) * 1000 / 1001) < 0.005 {
            (numerator, denominator) = (whole * 1000, 1001)
            return
        }
        (numerator, denominator) = (max(1, Int(fps.rounded())), 1)
    }

    public var value: Double { Double(numerator) / Double(denominator) }
    /// Frames in a timecode second.
    public var timecodeBase: Int { Int((value).rounded()) }
    var allowsDropFrame: Bool { denominator == 1001 && timecodeBase % 30 == 0 }

    /// The frame shown at `seconds`.
    public func frames(_ seconds: Double) -> Int { Int((seconds * value).rounded()) }

    /// `frames` frames as seconds, exactly, as FCPXML writes time: `n/ds` or `0s`.
    func rational(_ frames: Int) -> String {
        guard frames != 0 else { return "0s" }
        let (num, den) = (frames * denominator, numerator)
        let divisor = Self.gcd(num, den)
        return den / divisor == 1 ? "\(num / divisor)s" : "\(num / divisor)/\(den / divisor)s"
    }

    /// One frame's duration as FCPXML writes it (`100/3000s` for 30, `1001/30000s` for 29.97).
    var frameDuration: String {
        denominator == 1001 ? "1001/\(numerator)s" : (600 % numerator == 0 ? "\(600 / numerator)/600s" : "100/\(numerator * 100)s")
    }

    /// The frame number of a timecode (`HH:MM:SS:FF`; `;` before the frames counts drop-frame).
    public func frames(timecode: String) -> Int? {
        let fields = timecode.split(omittingEmptySubsequences: false) { $0 == ":" || $0 == ";" || $0 == "." }.map { Int($0) }
        guard fields.count == 4, let h = fields[0], let m = fields[1], let s = fields[2], let f = fields[3],
            (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(s), (0..<timecodeBase).contains(f)
        else { return nil }
        let base = timecodeBase
        var total = ((h * 60 + m) * 60 + s) * base + f
        if allowsDropFrame && timecode.contains(";") {
            // Two frame numbers (four at 59.94) skipped every minute but every tenth.
            let drop = base / 15
            let minutes = h * 60 + m
            total -= drop * (minutes - minutes / 10)
        }
        return total
    }

    /// The timecode of frame `frame`, drop-frame (`;`) or not.
    public func timecode(_ frame: Int, dropFrame: Bool = false) -> String {
        var n = max(0, frame)
        let base = timecodeBase
        if dropFrame && allowsDropFrame {
            let drop = base / 15
            let perTenMinutes = base * 600 - drop * 9
            let perMinute = base * 60 - drop
            let tens = n / perTenMinutes
            let rest = n % perTenMinutes
            n += drop * 9 * tens + (rest > drop ? drop * ((rest - drop) / perMinute) : 0)
        }
        let f = n % base, s = (n / base) % 60, m = (n / base / 60) % 60, h = (n / base / 3600) % 24
        return String(format: "%02d:%02d:%02d%@%02d", h, m, s, dropFrame && allowsDropFrame ? ";" : ":", f)
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? abs(a) : gcd(b, a % b) }
}
