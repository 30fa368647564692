import Foundation
import Highlights
import Media
import MediaSynth
import MomentsModel
import Timelines

/// The fuzzing target: one input through what an upload meets on a worker. In memory: the probe
/// (container and stream checks), the demuxer, the decoders and the analysis pass (scene, motion
/// and audio features). Then, for an input the analysis takes, the whole highlight of it as a file
/// (analysis, selection, render on whichever path it allows, poster, thumbnails) with settings
/// the input's own bytes choose (`FuzzSettings`), and its timeline in every format. Built twice
/// by `scripts/fuzz`:
///
/// - with `-sanitize=fuzzer,address -D FUZZING`, libFuzzer's driver runs every input it makes
///   under AddressSanitizer and LeakSanitizer;
/// - plainly (the package's own build), `moments-fuzz` writes the seed corpus with our encoder
///   (`seeds DIR`) and replays files (`replay FILE…`: the regression fixtures in `Fuzz/regressions`).
enum MediaFuzzer {
    static let engine = HighlightEngine()

    /// A short clip's limits: what a seed-sized input can need, so one input costs milliseconds.
    static let settings = HighlightSettings(duration: 5, limits: MediaLimits(maximumDuration: 120))

    /// Where each input's highlight is written (memory, where the machine has it).
    static let scratch: URL = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
        let folder = base.appendingPathComponent("moments-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// Runs one input; the outcome as a line: `ok <duration> <render mode>`, or the error's code.
    @discardableResult
    static func run(_ bytes: [UInt8]) -> String {
        do {
            _ = try engine.analyze(source: MemoryInput(bytes), name: "input", settings: settings)
        } catch {
            return error.code.rawValue
        }
        let input = scratch.appendingPathComponent("input"), output = scratch.appendingPathComponent("highlight.mp4")
        defer { for file in ["input", "highlight.mp4", "poster.jpg", "thumbnails.jpg"] { unlink(scratch.appendingPathComponent(file).path) } }
        guard FileManager.default.createFile(atPath: input.path, contents: Data(bytes)) else { return "io_error" }
        let settings = FuzzSettings(bytes).settings(stillsIn: scratch)
        do {
            let report = try engine.highlight(input: input.path, output: output.path, settings: settings)
            let timeline = EditTimeline(
                highlightOf: input, frameRate: report.input.frameRate, sourceDuration: report.input.duration,
                startTimecode: report.input.startTimecode, hasAudio: report.input.hasAudio,
                width: report.input.displayWidth, height: report.input.displayHeight,
                clips: report.segments.map { EditTimeline.Clip(start: $0.start, end: $0.end) })
            let written = TimelineFormat.allCases.reduce(0) { $0 + timeline.render($1).utf8.count }
            return "ok \(report.output.duration) \(report.render.mode.rawValue) \(written > 0 ? "timelines" : "")"
        } catch {
            return error.code.rawValue
        }
    }

    /// Small files of every shape an upload takes, each made by our encoder.
    static func writeSeeds(to folder: URL) throws {
        FFmpegLog.quiet()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func clip(_ name: String, _ change: (inout SyntheticVideo) -> Void) throws {
            var video = SyntheticVideo(
                width: 64, height: 36, frameRate: 15,
                scenes: [
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
        try clip("h264-vfr-rotated.mp4") {
            $0.variableFrameRate = true; $0.rotation = 90
        }
        try clip("hevc-hlg-10bit.mov") {
            $0.videoCodec = "libx265"
            $0.pixelFormat = "yuv420p10le"
            $0.colorTags = .hlg
            $0.encoderOptions = ["preset": "ultrafast", "x265-params": "keyint=8:open-gop=1:bframes=2:log-level=none"]
        }
        try clip("h264-opus.mkv") {
            $0.audio = .opus; $0.audioSampleRate = 48000
        }
        try clip("h264-mp3.ts") {
            $0.audio = .mp3; $0.audioSampleRate = 44100
        }
        try clip("audio-only.m4a") { $0.hasVideo = false }
    }
}

#if FUZZING
    /// libFuzzer's driver, which parses its flags from the command line and calls `callback` per input.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

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

/// A highlight's settings chosen by an input's own bytes (an FNV-1a hash of them), so that the
/// fuzzer explores the settings with the media and a saved input replays the same run: target
/// 1–8 s, quality, codec, aspect, segment choices, stills or none, frame rate.
struct FuzzSettings {
    var hash: UInt64

    init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        self.hash = hash
    }

    /// `count` choices from the next bits of the hash.
    private mutating func choose(_ count: Int) -> Int {
        defer { hash = hash >> 7 | hash << 57 }
        return Int(hash % UInt64(count))
    }

    /// The settings; stills, when chosen, go to `folder`.
    func settings(stillsIn folder: URL) -> HighlightSettings {
        var bits = self
        let target = Double(1 + bits.choose(8))
        var choices = HighlightChoices(aspect: AspectRatio.allCases[bits.choose(AspectRatio.allCases.count)])
        switch bits.choose(4) {
        case 0: choices.minSegment = Double(1 + bits.choose(3))
        case 1: choices.maxSegment = Double(1 + bits.choose(3))
        case 2: choices.maxSegments = 1 + bits.choose(4)
        default: break
        }
        if (try? choices.check(targetDuration: target)) == nil { (choices.minSegment, choices.maxSegment, choices.maxSegments) = (nil, nil, nil) }
        var settings = HighlightSettings(
            duration: target, quality: Quality.allCases[bits.choose(Quality.allCases.count)],
            codec: VideoCodecChoice.allCases[bits.choose(VideoCodecChoice.allCases.count)],
            limits: MediaLimits(maximumDuration: 120), choices: choices)
        if bits.choose(3) != 0 {
            settings.stills = StillPaths(
                poster: folder.appendingPathComponent("poster.jpg").path,
                thumbnails: folder.appendingPathComponent("thumbnails.jpg").path)
        }
        // Chosen last, so the bits above choose as they did for inputs saved before.
        settings.choices.fps = FrameRateChoice.allCases[bits.choose(FrameRateChoice.allCases.count)]
        return settings
    }
}
