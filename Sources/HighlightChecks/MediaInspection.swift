import Foundation

/// A file as FFmpeg's own tools see it (an independent reader and decoder): its streams, every
/// picture it decodes to (time, checksum, brightness), its sound, and any error decoding them.
public struct MediaInspection: Sendable {
    public struct Picture: Sendable {
        /// Presentation time in seconds, as a player shows it (edit lists applied).
        public var time: Double
        /// Adler-32 of the decoded picture (after the display matrix is applied), as `showinfo` prints it.
        public var checksum: String
        /// Mean luma, 0 (black) … 1 (white) of the picture's sample range.
        public var luma: Double
    }

    /// `ffprobe -show_streams -show_format`, flattened.
    public var streams: [[String: String]]
    public var format: [String: String]
    public var pictures: [Picture]
    /// Mono, 48 kHz, from `audioStart` on.
    public var audio: [Float]
    public var audioStart: Double
    /// What the decoders reported at error level or worse.
    public var errors: [String]

    public var video: [String: String]? { streams.first { $0["codec_type"] == "video" } }
    public var sound: [String: String]? { streams.first { $0["codec_type"] == "audio" } }
    public static let audioRate = 48_000.0

    /// Reads `path` with ffprobe and decodes it whole with ffmpeg (pictures always, sound when asked).
    public init(_ path: String, audio wantsAudio: Bool = true) throws {
        let probe = try Tool.run("ffprobe", ["-v", "error", "-show_streams", "-show_format", path])
        guard probe.status == 0 else { throw Tool.Failure(description: "ffprobe could not read \(path): \(probe.errorText)") }
        (streams, format) = Self.sections(String(decoding: probe.output, as: UTF8.self))
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent("moments-check-\(UUID().uuidString).f32")
        defer { try? FileManager.default.removeItem(at: raw) }
        let hasAudio = wantsAudio && streams.contains { $0["codec_type"] == "audio" }
        // The pictures go to the null muxer with the file's own timestamps: in the default time
        // base (one tick a frame at the stated rate) two pictures of a 59.94 fps stream whose times
        // are whole milliseconds (from Matroska) can round to the same tick, which the muxer
        // reports as an error although every picture decoded.
        var arguments = [
            "-nostdin", "-hide_banner", "-v", "level+info", "-i", path,
            "-map", "0:v:0", "-vf", "showinfo", "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null", "-",
        ]
        if hasAudio { arguments += ["-map", "0:a:0", "-ac", "1", "-ar", "48000", "-f", "f32le", "-y", raw.path] }
        let decode = try Tool.run("ffmpeg", arguments)
        var pictures: [Picture] = []
        var errors: [String] = []
        // showinfo's `pts_time` has six significant digits; `pts` in the filter's time base is exact.
        var timeBase = 0.0
        for line in decode.errorText.split(separator: "\n") {
            if line.contains("[error]") || line.contains("[fatal]") || line.contains("[panic]") {
                errors.append(String(line))
            } else if line.contains("Parsed_showinfo") {
                if let base = line.range(of: "config in time_base: ").map({ line[$0.upperBound...].prefix { $0 != "," } }) {
                    let terms = base.split(separator: "/").compactMap { Double($0) }
                    timeBase = terms.count == 2 && terms[1] > 0 ? terms[0] / terms[1] : 0
                } else if let picture = Self.picture(line, timeBase: timeBase) {
                    pictures.append(picture)
                }
            }
        }
        if decode.status != 0 && errors.isEmpty { errors.append("ffmpeg exited \(decode.status)") }
        self.pictures = pictures
        self.errors = errors
        audio = hasAudio ? ((try? Data(contentsOf: raw)).map { data in data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } } ?? []) : []
        audioStart = Double(streams.first { $0["codec_type"] == "audio" }?["start_time"] ?? "") ?? 0
    }

    /// One `showinfo` line: `n: … pts_time:1.234 … fmt:yuv420p … checksum:ABCD1234 … mean:[81 127 128] …`.
    static func picture(_ line: Substring, timeBase: Double) -> Picture? {
        func field(_ name: String) -> Substring? {
            guard let range = line.range(of: " \(name):") else { return nil }
            let rest = line[range.upperBound...].drop { $0 == " " }
            return rest.prefix { $0 != " " }
        }
        let exact = timeBase > 0 ? field("pts").flatMap { Double($0) }.map { $0 * timeBase } : nil
        guard let time = exact ?? field("pts_time").flatMap({ Double($0) }), let checksum = field("checksum"),
            let mean = line.range(of: "mean:[").map({ line[$0.upperBound...].prefix { $0 != " " && $0 != "]" } }),
            let y = Double(mean)
        else { return nil }
        let format = field("fmt") ?? "yuv420p"
        // showinfo averages samples as stored: 10-bit formats count to 1023.
        let (black, white) = format.contains("10") ? (64.0, 940.0) : (16.0, 235.0)
        return Picture(time: time, checksum: String(checksum), luma: (y - black) / (white - black))
    }

    /// ffprobe's default output (`[STREAM]` and `[FORMAT]` sections of `key=value` lines), flattened.
    public static func sections(_ text: String) -> (streams: [[String: String]], format: [String: String]) {
        var streams: [[String: String]] = []
        var format: [String: String] = [:]
        var current: [String: String]?
        for line in text.split(separator: "\n").map(String.init) {
            switch line {
            case "[STREAM]", "[FORMAT]": current = [:]
            case "[/STREAM]": streams.append(current ?? [:]); current = nil
            case "[/FORMAT]": format = current ?? [:]; current = nil
            default:
                if let eq = line.firstIndex(of: "=") { current?[String(line[..<eq])] = String(line[line.index(after: eq)...]) }
            }
        }
        return (streams, format)
    }
}

extension MediaInspection {
    /// Pictures brighter than both neighbours by `rise` (a one-frame flash), by index.
    public func flashes(rise: Double = 0.06) -> [Int] {
        guard pictures.count >= 3 else { return [] }
        return (1..<(pictures.count - 1)).filter {
            pictures[$0].luma - max(pictures[$0 - 1].luma, pictures[$0 + 1].luma) > rise
        }
    }

    /// Times (seconds, as the player's clock) where a loud click starts after 10 ms of quiet (the
    /// last 3 ms before it left out: a click's own first samples and an AAC pre-echo rise there).
    public func clicks(level: Float = 0.3, quiet: Float = 0.2) -> [Double] {
        let block = Int(Self.audioRate / 1000)
        var found: [Double] = []
        var recent = [Float](repeating: 0, count: 10)  // the last ten 1 ms blocks' peaks, oldest at `slot`
        var slot = 0
        var current: Float = 0
        var holdOff = 0
        for (index, sample) in audio.enumerated() {
            let value = abs(sample)
            if holdOff > 0 {
                holdOff -= 1
            } else if value >= level, (0..<(recent.count - 2)).allSatisfy({ recent[(slot + $0) % recent.count] < quiet }) {
                found.append(audioStart + Double(index) / Self.audioRate)
                holdOff = 30 * block
            }
            current = max(current, value)
            if (index + 1) % block == 0 {
                recent[slot] = current
                slot = (slot + 1) % recent.count
                current = 0
            }
        }
        return found
    }
}
