import Foundation
import Highlights
import Media
import MediaSynth
import MomentsModel

/// The fuzzing target: one input, in memory, through what an upload meets on a worker: the probe
/// (container and stream checks), the demuxer, the decoders and the analysis pass (scene, motion
/// and audio features). Built twice by `scripts/fuzz`:
///
/// - with `-sanitize=fuzzer,address -D FUZZING`, libFuzzer's driver runs every input it makes
///   under AddressSanitizer and LeakSanitizer;
/// - plainly (the package's own build), `moments-fuzz` writes the seed corpus with our encoder
///   (`seeds DIR`) and replays files (`replay FILE…`: the regression fixtures in `Fuzz/regressions`).
enum MediaFuzzer {
    static let engine = HighlightEngine()

    /// A short clip's limits: what a seed-sized input can need, so one input costs milliseconds.
    static let settings = HighlightSettings(duration: 5, limits: MediaLimits(maximumDuration: 120))

    /// Runs one input; the outcome as a line: `ok <duration>` or the error's code.
    @discardableResult
    static func run(_ bytes: [UInt8]) -> String {
        do {
            let analysis = try engine.analyze(source: MemoryInput(bytes), name: "input", settings: settings)
            return "ok \(analysis.info.duration)"
        } catch {
            return error.code.rawValue
        }
    }

    /// Small files of every shape an upload takes, each made by our encoder.
    static func writeSeeds(to folder: URL) throws {
        FFmpegLog.quiet()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func clip(_ name: String, _ change: (inout SyntheticVideo) -> Void) throws {
            var video = SyntheticVideo(width: 64, height: 36, frameRate: 15, scenes: [
                .init(frames: 8, camera: .still, toneHz: 220),
                .init(frames: 8, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 330),
                .init(frames: 8, camera: .still, transitionIn: .dissolve(frames: 4), toneHz: 440),
            ])
            video.gopSize = 8
            video.audioSampleRate = 8000
            change(&video)
            try video.write(to: folder.appendingPathComponent(name).path)
        }
        try clip("h264-aac.mp4") { _ in }
        try clip("h264-silent.mov") { $0.audio = nil }
        try clip("h264-vfr-rotated.mp4") { $0.variableFrameRate = true; $0.rotation = 90 }
        try clip("hevc-hlg-10bit.mov") {
            $0.videoCodec = "libx265"
            $0.pixelFormat = "yuv420p10le"
            $0.colorTags = .hlg
            $0.encoderOptions = ["preset": "ultrafast", "x265-params": "keyint=8:open-gop=1:bframes=2:log-level=none"]
        }
        try clip("h264-opus.mkv") { $0.audio = .opus; $0.audioSampleRate = 48000 }
        try clip("h264-mp3.ts") { $0.audio = .mp3; $0.audioSampleRate = 44100 }
        try clip("audio-only.m4a") { $0.hasVideo = false }
    }
}

#if FUZZING
/// libFuzzer's driver, which parses its flags from the command line and calls `callback` per input.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The executable's entry point under SwiftPM (which names it `<target>_main`): hands over to libFuzzer.
@_cdecl("moments_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc, vector = argv
    return runFuzzerDriver(&count, &vector) { data, size in fuzzOneInput(data, size) }
}

/// One input (libFuzzer's own `main`, linked in as well, names this symbol).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    MediaFuzzer.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
#else
@main
struct FuzzTool {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "seeds" where arguments.count == 2:
            try MediaFuzzer.writeSeeds(to: URL(fileURLWithPath: arguments[1]))
        case "replay" where arguments.count >= 2:
            FFmpegLog.quiet()
            for path in arguments.dropFirst() {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
                print("\(URL(fileURLWithPath: path).lastPathComponent): \(MediaFuzzer.run(bytes))")
            }
        default:
            FileHandle.standardError.write(Data("usage: moments-fuzz seeds DIR | replay FILE…\n".utf8))
            exit(2)
        }
    }
}
#endif
