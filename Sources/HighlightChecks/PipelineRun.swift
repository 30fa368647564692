import Foundation
import Highlights
import Media
import MomentsModel
import Timelines

/// One case through the whole engine in this process: the source written, the highlight with its
/// poster and thumbnails, and the three timelines of its segments, in a folder of the run's own.
public struct PipelineRun: Sendable {
    public enum Outcome: Sendable {
        case made(HighlightReport)
        case failed(MomentsError)
    }

    public let pipelineCase: PipelineCase
    public let folder: URL

    public init(_ pipelineCase: PipelineCase, in folder: URL) {
        self.pipelineCase = pipelineCase
        self.folder = folder
    }

    public var source: String { folder.appendingPathComponent(pipelineCase.sourceName).path }
    public var output: String { folder.appendingPathComponent("highlight.mp4").path }
    public var poster: String { folder.appendingPathComponent("poster.jpg").path }
    public var thumbnails: String { folder.appendingPathComponent("thumbnails.jpg").path }
    public func timeline(_ format: TimelineFormat) -> String { folder.appendingPathComponent("timeline.\(format.fileExtension)").path }

    /// Writes the source unless a file (a stored fixture) is already there.
    public func writeSource() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard !FileManager.default.fileExists(atPath: source) else { return }
        FFmpegLog.quiet()
        let partial = source + ".partial." + (pipelineCase.sourceName as NSString).pathExtension
        try pipelineCase.video.write(to: partial)
        try FileManager.default.moveItem(atPath: partial, toPath: source)
    }

    /// The highlight, its stills and its timelines.
    public func run() -> Outcome {
        var settings = pipelineCase.settings
        settings.stills = StillPaths(poster: pipelineCase.poster ? poster : nil, thumbnails: pipelineCase.thumbnails ? thumbnails : nil)
        do {
            let report = try HighlightEngine().highlight(input: source, output: output, settings: settings)
            try ReportJSON.encoder.encode(report).write(to: folder.appendingPathComponent("report.json"))
            for format in TimelineFormat.allCases {
                try Data(Self.timeline(of: report, source: source).render(format).utf8).write(to: URL(fileURLWithPath: timeline(format)))
            }
            return .made(report)
        } catch let error as MomentsError {
            return .failed(error)
        } catch {
            return .failed(MomentsError(.ioError, "A timeline could not be written: \(error)"))
        }
    }

    /// The timeline of a highlight's segments over its source, as `moments highlight --timeline` writes it.
    public static func timeline(of report: HighlightReport, source: String) -> EditTimeline {
        let info = report.input
        return EditTimeline(
            highlightOf: URL(fileURLWithPath: source), frameRate: info.frameRate, sourceDuration: info.duration,
            startTimecode: info.startTimecode, hasAudio: info.hasAudio, width: info.displayWidth,
            height: info.displayHeight, clips: report.segments.map { EditTimeline.Clip(start: $0.start, end: $0.end) })
    }
}
