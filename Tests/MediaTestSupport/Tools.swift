import Foundation
import HighlightChecks
import ServiceTestSupport

/// Runs a program (by path, or found on `PATH`) and returns its exit status, standard output and
/// standard error (through files: see `captured`).
@discardableResult
public func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let result = executable.hasPrefix("/") ? try captured(executable, arguments) : try captured("/usr/bin/env", [executable] + arguments)
    return (result.status, String(decoding: result.output, as: UTF8.self), String(decoding: result.errors, as: UTF8.self))
}

/// The `moments` executable built beside the tests.
public var momentsBinary: String { TestServices.momentsBinary.path }

/// ffprobe's view of a file's streams and format, as flat key=value pairs per section.
public struct Probe {
    public var streams: [[String: String]] = []
    public var format: [String: String] = [:]

    public init(_ path: String) throws {
        (streams, format) = MediaInspection.sections(try run("ffprobe", ["-v", "error", "-show_streams", "-show_format", path]).stdout)
    }

    public var video: [String: String]? { streams.first { $0["codec_type"] == "video" } }
    public var audio: [String: String]? { streams.first { $0["codec_type"] == "audio" } }
    public var duration: Double { Double(format["duration"] ?? "") ?? 0 }
}

/// Top-level MP4 box types in file order.
public func topLevelBoxes(_ path: String) throws -> [String] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    var boxes: [String] = []
    var offset = 0
    while offset + 8 <= data.count {
        var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
        if size == 1, offset + 16 <= data.count { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
        if size == 0 { size = data.count - offset }
        guard size >= 8 else { break }
        boxes.append(type)
        offset += size
    }
    return boxes
}

/// Decodes a file's audio to mono 8 kHz floats with ffmpeg (an independent decoder).
public func decodedAudio(_ path: String) throws -> [Float] {
    let raw = FileManager.default.temporaryDirectory.appendingPathComponent("audio-\(UUID().uuidString).f32")
    defer { try? FileManager.default.removeItem(at: raw) }
    try run("ffmpeg", ["-v", "error", "-y", "-i", path, "-ac", "1", "-ar", "8000", "-f", "f32le", raw.path])
    let data = try Data(contentsOf: raw)
    return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

/// Decodes the first video frame to 8-bit grey with ffmpeg: (width, height, pixels).
public func firstFrameGrey(_ path: String, width: Int, height: Int) throws -> [UInt8] {
    let raw = FileManager.default.temporaryDirectory.appendingPathComponent("frame-\(UUID().uuidString).gray")
    defer { try? FileManager.default.removeItem(at: raw) }
    try run("ffmpeg", ["-v", "error", "-y", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", raw.path])
    return [UInt8](try Data(contentsOf: raw))
}

public func rms(_ samples: ArraySlice<Float>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1 * $1) } / Double(samples.count)).squareRoot()
}

/// Every decoded video frame's time (seconds from the first frame) and MD5, by ffmpeg's `framemd5`
/// (an independent decoder; the display matrix is applied as players do).
public func frameHashes(_ path: String) throws -> [(time: Double, hash: String)] {
    let result = try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-vsync", "passthrough", "-f", "framemd5", "-"])
    var timeBase = 1.0
    var frames: [(time: Double, hash: String)] = []
    for line in result.stdout.split(separator: "\n") {
        if line.hasPrefix("#tb 0:") {
            let parts = line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/")
            if parts.count == 2, let n = Double(parts[0]), let d = Double(parts[1]) { timeBase = n / d }
            continue
        }
        guard !line.hasPrefix("#") else { continue }
        let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.count == 6, let pts = Double(fields[2]) else { continue }
        frames.append((pts * timeBase, fields[5]))
    }
    guard let first = frames.first?.time else { return [] }
    return frames.map { ($0.time - first, $0.hash) }
}

/// The lag (seconds, positive when `b` is late) within ±`range` that best lines `b` up with `a`,
/// by normalised cross-correlation; and how well they then match (1 = identical).
public func bestLag(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>, rate: Double, range: Double) -> (lag: Double, correlation: Double) {
    let maxShift = Int(range * rate)
    let a = Array(a), b = Array(b)
    var best = (lag: 0.0, correlation: -1.0)
    for shift in -maxShift...maxShift {
        var dot = 0.0, na = 0.0, nb = 0.0
        for i in 0..<a.count {
            let j = i + shift
            guard j >= 0, j < b.count else { continue }
            dot += Double(a[i]) * Double(b[j])
            na += Double(a[i] * a[i])
            nb += Double(b[j] * b[j])
        }
        let c = na > 0 && nb > 0 ? dot / (na * nb).squareRoot() : 0
        if c > best.correlation { best = (Double(shift) / rate, c) }
    }
    return best
}

/// Runs a program to its end and returns its exit status and peak resident memory in MB, as GNU
/// time measures it (it forks the program from its own small process: a child spawned straight
/// from this large test process would inherit its high-water mark at exec).
public func runMeasuringMemory(_ executable: String, _ arguments: [String]) throws -> (status: Int32, peakMB: Double) {
    let report = FileManager.default.temporaryDirectory.appendingPathComponent("rss-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: report) }
    let result = try run("/usr/bin/time", ["-f", "%M", "-o", report.path, executable] + arguments)
    let text = try String(contentsOf: report, encoding: .utf8)
    // GNU time writes "Command exited with non-zero status N" before the figure when it fails.
    let kilobytes = text.split(separator: "\n").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? .infinity
    return (result.status, kilobytes / 1024)
}
