import ArgumentParser
import Foundation
import Highlights
import Media
import MomentsModel

extension Quality: ExpressibleByArgument {}
extension VideoCodecChoice: ExpressibleByArgument {}

struct HighlightCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "highlight",
        abstract: "Makes a highlight reel of a video.")

    @Argument(help: "The video to make a highlight of.") var input: String
    @Option(name: .shortAndLong, help: "Where to write the highlight (.mp4).") var output: String
    @Option(help: "Target length in seconds.") var duration = Double(HighlightLimits.defaultTargetDuration)
    @Option(help: "high (≤1920 px), medium (≤1280 px), low (≤854 px) or original (the source's size, frame rate and HDR: copied where it can be).")
    var quality: Quality = .high
    @Option(help: "auto (copy the source's H.264/HEVC between keyframes where it allows, else H.264) or h264 (always H.264, HDR tone-mapped).")
    var codec: VideoCodecChoice = .auto
    @Option(help: "Write a JSON report of the run here.") var report: String?
    @Option(help: "Longest accepted video, in seconds.") var maxDuration = Double(HighlightLimits.maximumSourceDuration)
    @OptionGroup var choiceOptions: ChoiceOptions
    @OptionGroup var timelineOption: TimelineOption
    @Option(help: "Write the highlight's poster (its best picture that is neither dark nor blurred) here, as JPEG.") var poster: String?
    @Option(help: "Write a strip of thumbnails, one per segment, here, as JPEG.") var thumbnails: String?
    @Option(help: "A music track (MP3, M4A, WAV, FLAC, Ogg; 10 s to 10 min) to put under the highlight, with the cuts on its beat.")
    var music: String?
    @Option(help: "The music's loudness against the video's sound, in dB (-30 to 12; -6: 6 dB under it).")
    var musicVolume = MusicSettings.defaultVolume
    @Flag(help: "With --music: the music alone, without the video's own sound.") var noSourceAudio = false

    func validate() throws {
        guard duration >= 1, duration <= 3600 else {
            throw ValidationError("--duration must be between 1 and 3600 seconds.")
        }
        _ = try choiceOptions.choices(target: duration, quality: quality)
        guard MusicSettings.volumes.contains(musicVolume) else {
            throw ValidationError(
                "--music-volume must be between \(Int(MusicSettings.volumes.lowerBound)) and \(Int(MusicSettings.volumes.upperBound)) dB.")
        }
        if music == nil && noSourceAudio { throw ValidationError("--no-source-audio needs --music.") }
    }

    func run() throws {
        var settings = HighlightSettings(
            duration: duration, quality: quality, codec: codec, limits: MediaLimits(maximumDuration: maxDuration),
            choices: try choiceOptions.choices(target: duration, quality: quality))
        settings.stills = StillPaths(poster: poster, thumbnails: thumbnails)
        let display = ProgressDisplay()
        let cancellation = CancellationFlag()
        let stop = SignalCancellation(flag: cancellation)
        defer { stop.restore() }
        let result = try runReportingErrors {
            defer { display.finish() }
            if let music {
                settings.music = MusicSettings(
                    path: music, analysis: try MusicAnalyzer.analyse(path: music), volume: musicVolume,
                    keepSourceAudio: !noSourceAudio, title: URL(fileURLWithPath: music).lastPathComponent)
            }
            return try HighlightEngine().highlight(
                input: input, output: output, settings: settings,
                cancellation: cancellation, progress: display.update)
        }
        try timelineOption.write(input: input, info: result.input, segments: result.segments)
        if let report {
            try ReportJSON.encoder.encode(result).write(to: URL(fileURLWithPath: report))
        }
        print(
            String(
                format: "highlight: %@ (%.2f s, %d×%d %@, %@, %d segments, %.1fx real time)", output,
                result.output.duration, result.output.width, result.output.height, result.output.videoCodec,
                result.render.mode.rawValue, result.segments.count, result.realTimeFactor))
    }
}
