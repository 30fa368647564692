import ArgumentParser
import Foundation
import Highlights
import Media
import Timelines

/// `--timeline FORMAT FILE` of `highlight` and `analyze`: the selected segments as an editor's
/// timeline over the input file.
struct TimelineOption: ParsableArguments {
    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp(
            "Also write the selected segments as an editor's timeline: edl (CMX 3600), fcpxml (Final Cut Pro 1.10) or otio (OpenTimelineIO), then the file.",
            valueName: "FORMAT FILE"))
    var timeline: [String] = []

    func validate() throws { _ = try request() }

    /// The format and the file asked for, or nil.
    func request() throws -> (format: TimelineFormat, file: String)? {
        guard !timeline.isEmpty else { return nil }
        guard timeline.count == 2 else { throw ValidationError("--timeline takes a format and a file, e.g. --timeline fcpxml cut.fcpxml.") }
        guard let format = TimelineFormat(rawValue: timeline[0].lowercased()) else {
            throw ValidationError("--timeline's format must be edl, fcpxml or otio, not '\(timeline[0])'.")
        }
        return (format, timeline[1])
    }

    /// Writes the timeline of `segments` of `input` (described by `info`), if one was asked for.
    func write(input: String, info: MediaInfo, segments: [Segment]) throws {
        guard let (format, file) = try request() else { return }
        let timeline = EditTimeline(
            highlightOf: URL(fileURLWithPath: input), frameRate: info.frameRate, sourceDuration: info.duration,
            startTimecode: info.startTimecode, hasAudio: info.hasAudio, width: info.displayWidth,
            height: info.displayHeight, clips: segments.map { EditTimeline.Clip(start: $0.start, end: $0.end) })
        do {
            try Data(timeline.render(format).utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
        } catch {
            throw ValidationError("The timeline could not be written to \(file): \(error.localizedDescription)")
        }
    }
}
