import Foundation
import Media
import MediaSynth

/// Footage for end-to-end tests, made once per test process by our own encoder.
public enum TestFootage {
    /// 20 s at 30 fps, 320×180: six shots with cuts, a dissolve and a fade, a tone per shot.
    public static let twentySeconds: String = {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: 90, camera: .still, toneHz: 220),
                .init(frames: 120, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 277),
                .init(frames: 90, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 330),
                .init(frames: 90, camera: .still, transitionIn: .dissolve(frames: 16), toneHz: 370),
                .init(frames: 120, camera: .pan(pixelsPerFrame: -2), transitionIn: .fadeThroughBlack(frames: 20), toneHz: 415),
                .init(frames: 90, camera: .still, transitionIn: .cut, toneHz: 494),
            ])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        return written(video, "clip")
    }()

    /// 6 s at 30 fps, 320×180: two shots and a cut; another file than `twentySeconds`.
    public static let sixSeconds: String = {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: 90, camera: .still, toneHz: 262),
                .init(frames: 90, camera: .pan(pixelsPerFrame: 3), transitionIn: .cut, toneHz: 392),
            ])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        return written(video, "6s")
    }()

    /// `SyntheticVideo.blackOpening`: 3 s black, 3 s out of focus, 5 s sharp, 3 s out of focus.
    public static let blackOpening = written(SyntheticVideo.blackOpening, "dark")

    /// `SyntheticVideo.movingSubject`: 640×360, a bright 60 px square crossing the frame and back.
    public static let movingSubject = written(SyntheticVideo.movingSubject, "subject")

    /// Per frame of a video, read by ffmpeg as grey: the horizontal centre of its pixels at or
    /// above `threshold` (nil where there are none), and the picture's width.
    public static func brightCentres(_ path: String, threshold: UInt8 = 240) throws -> (centres: [Double?], width: Int) {
        let size = try pictureSize(path)
        let data = [UInt8](try capturedOutput("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-vf", "format=gray", "-f", "rawvideo", "-"]))
        let frameBytes = size.width * size.height
        guard frameBytes > 0 else { return ([], 0) }
        var centres: [Double?] = []
        for start in stride(from: 0, to: data.count - frameBytes + 1, by: frameBytes) {
            var sum = 0, count = 0
            for y in 0..<size.height {
                let row = start + y * size.width
                for x in 0..<size.width where data[row + x] >= threshold {
                    sum += x
                    count += 1
                }
            }
            centres.append(count > 0 ? Double(sum) / Double(count) + 0.5 : nil)
        }
        return (centres, size.width)
    }

    /// 24 s at 30 fps, 640×360 with heavy sensor noise at 6 Mbit/s: about 18 MB, four parts of a
    /// resumable upload at 5 MiB each.
    public static let large: String = {
        var video = SyntheticVideo(
            width: 640, height: 360, frameRate: 30,
            scenes: [
                .init(frames: 240, camera: .pan(pixelsPerFrame: 2), toneHz: 262),
                .init(frames: 240, camera: .still, transitionIn: .cut, toneHz: 330),
                .init(frames: 240, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 392),
            ])
        video.gopSize = 30
        video.noise = 24
        video.bitRate = 6_000_000
        video.encoderOptions = ["preset": "ultrafast"]
        return written(video, "large")
    }()

    /// `video` written (once per test process) to a temporary file named after `name`.
    static func written(_ video: SyntheticVideo, _ name: String) -> String {
        FFmpegLog.quiet()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-footage-\(name)-\(UUID().uuidString).mp4").path
        try! video.write(to: path)
        return path
    }

    /// A picture of `path` (a video at `time` seconds, or an image) as 8-bit grey, `width` × `height`, read by ffmpeg.
    public static func grey(_ path: String, at time: Double? = nil, width: Int, height: Int) throws -> [UInt8] {
        [UInt8](
            try capturedOutput(
                "/usr/bin/ffmpeg",
                ["-v", "error"] + (time.map { ["-ss", String($0)] } ?? []) + [
                    "-i", path,
                    "-frames:v", "1", "-vf", "scale=\(width):\(height),format=gray", "-f", "rawvideo", "-",
                ]))
    }

    /// Mean brightness and mean absolute Laplacian (edge strength) of a grey picture.
    public static func look(_ grey: [UInt8], width: Int) -> (mean: Double, sharpness: Double) {
        guard width > 2, grey.count >= width * 3 else { return (0, 0) }
        let height = grey.count / width
        var edges = 0, count = 0
        for row in 1..<(height - 1) {
            for column in 1..<(width - 1) {
                let i = row * width + column
                edges += abs(4 * Int(grey[i]) - Int(grey[i - 1]) - Int(grey[i + 1]) - Int(grey[i - width]) - Int(grey[i + width]))
                count += 1
            }
        }
        return (Double(grey.reduce(0) { $0 + Int($1) }) / Double(grey.count), Double(edges) / Double(max(1, count)))
    }

    /// Width and height of a picture or video's first stream, as ffprobe reads them; (0, 0) when it cannot.
    public static func pictureSize(_ path: String) throws -> (width: Int, height: Int) {
        let text = String(
            decoding: try capturedOutput(
                "/usr/bin/ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries",
                    "stream=width,height", "-of", "csv=p=0", path,
                ]), as: UTF8.self)
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : (0, 0)
    }

    /// The duration ffprobe reads from a file's container, or -1.
    public static func duration(_ path: String) throws -> Double {
        let data = try capturedOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path])
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}

/// Timeline exports read back by OpenTimelineIO and its adapters (`scripts/read-timeline`, in the
/// Python that `scripts/test` prepares: `MOMENTS_PYTHON`).
public enum TimelineReader {
    public struct Clip: Sendable {
        public var start: Double
        public var duration: Double
        public var rate: Double
        public var targetURL: String?
    }

    /// The clips of each track (video first, as written) and the timeline's duration in frames.
    public static func read(_ format: String, _ path: String, rate: Double = 30) throws -> (tracks: [(kind: String, clips: [Clip])], duration: Double)
    {
        let python = try TestServices.environment("MOMENTS_PYTHON")
        let script = TestServices.repository.appendingPathComponent("scripts/read-timeline").path
        let (status, data, errors) = try captured(python, [script, format, path, String(rate)])
        let message = String(decoding: errors, as: UTF8.self)
        guard status == 0, let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TestFailure("read-timeline \(format) \(path) failed: \(message)")
        }
        let tracks = (json["tracks"] as? [[String: Any]] ?? []).map { track in
            (
                kind: track["kind"] as? String ?? "",
                clips: (track["clips"] as? [[String: Any]] ?? []).map {
                    Clip(
                        start: $0["start"] as? Double ?? -1, duration: $0["duration"] as? Double ?? -1, rate: $0["rate"] as? Double ?? 0,
                        targetURL: $0["target_url"] as? String)
                }
            )
        }
        return (tracks, (json["duration"] as? [String: Any])?["value"] as? Double ?? -1)
    }

    /// Whether `xmllint --noout` finds `path` well-formed; its complaint otherwise.
    public static func wellFormed(_ path: String) throws -> String? {
        let (status, _, errors) = try captured("/usr/bin/env", ["xmllint", "--noout", path])
        return status == 0 ? nil : String(decoding: errors, as: UTF8.self)
    }

}
