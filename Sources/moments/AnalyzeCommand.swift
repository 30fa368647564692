import ArgumentParser
import Foundation
import Highlights
import Media
import MomentsModel

struct AnalyzeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analyses a video (media info, scenes, per-second features, candidate segments) without rendering.")

    @Argument(help: "The video to analyse.") var input: String
    @Flag(help: "Print the analysis as JSON.") var json = false
    @Option(help: "Target highlight length in seconds, for the candidate segments.") var duration = Double(HighlightLimits.defaultTargetDuration)
    @Option(help: "Longest accepted video, in seconds.") var maxDuration = Double(HighlightLimits.maximumSourceDuration)
    @OptionGroup var choiceOptions: ChoiceOptions
    @OptionGroup var timelineOption: TimelineOption

    func validate() throws { _ = try choiceOptions.choices(target: duration) }

    func run() throws {
        let settings = HighlightSettings(
            duration: duration, limits: MediaLimits(maximumDuration: maxDuration),
            choices: try choiceOptions.choices(target: duration))
        let analysis = try runReportingErrors { try HighlightEngine().analyze(input: input, settings: settings) }
        let selection = SegmentSelector.select(from: analysis, target: duration, rules: SegmentRules(settings.choices, target: duration))
        let report = AnalysisReport(analysis: analysis, selection: selection)
        try timelineOption.write(input: input, info: analysis.info, segments: selection.segments)
        if json {
            print(String(decoding: try ReportJSON.encoder.encode(report), as: UTF8.self))
        } else {
            print(report.text)
        }
    }
}
