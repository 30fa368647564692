import Foundation
import Media
import MediaSynth

/// Footage for end-to-end tests, made once per test process by our own encoder.
public enum TestFootage {
    /// 20 s at 30 fps, 320×180: six shots with cuts, a dissolve and a fade, a tone per shot.
    public static let twentySeconds: String = {
        FFmpegLog.quiet()
        var video = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: [
            .init(frames: 90, camera: .still, toneHz: 220),
            .init(frames: 120, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 277),
            .init(frames: 90, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 330),
            .init(frames: 90, camera: .still, transitionIn: .dissolve(frames: 16), toneHz: 370),
            .init(frames: 120, camera: .pan(pixelsPerFrame: -2), transitionIn: .fadeThroughBlack(frames: 20), toneHz: 415),
            .init(frames: 90, camera: .still, transitionIn: .cut, toneHz: 494),
        ])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-footage-\(UUID().uuidString).mp4").path
        try! video.write(to: path)
        return path
    }()

    /// 6 s at 30 fps, 320×180: two shots and a cut; another file than `twentySeconds`.
    public static let sixSeconds: String = {
        FFmpegLog.quiet()
        var video = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: [
            .init(frames: 90, camera: .still, toneHz: 262),
            .init(frames: 90, camera: .pan(pixelsPerFrame: 3), transitionIn: .cut, toneHz: 392),
        ])
        video.gopSize = 30
        video.encoderOptions = ["preset": "veryfast"]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-footage-6s-\(UUID().uuidString).mp4").path
        try! video.write(to: path)
        return path
    }()

    /// The duration ffprobe reads from a file's container, or -1.
    public static func duration(_ path: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}
