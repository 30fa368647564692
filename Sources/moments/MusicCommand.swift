import ArgumentParser
import Foundation
import Highlights

/// `moments music`: music tracks for highlights.
struct MusicCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "music",
        abstract: "Music tracks for highlights.",
        subcommands: [Analyze.self])

    struct Analyze: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "analyze",
            abstract: "Analyses a music track (10 s to 10 min): its tempo, beats, bars, strong onsets and loud sections.")

        @Argument(help: "The track (MP3, M4A, WAV, FLAC, Ogg).") var input: String
        @Flag(help: "Print the analysis as JSON.") var json = false

        func run() throws {
            let analysis = try runReportingErrors { try MusicAnalyzer.analyse(path: input) }
            if json {
                print(String(decoding: try ReportJSON.encoder.encode(analysis), as: UTF8.self))
                return
            }
            print(String(format: "%@: %.1f s", input, analysis.duration))
            if let tempo = analysis.tempo {
                print(String(format: "beat: %.1f a minute (strength %.2f), %d beats, %d bars, first beat at %.3f s",
                             tempo, analysis.beatStrength ?? 0, analysis.beats.count, analysis.downbeats.count, analysis.beats.first ?? 0))
            } else {
                print("beat: none steady; \(analysis.onsets.count) strong onsets to cut on")
            }
            let sections = analysis.loudSections.map { String(format: "%.0f–%.0f s", $0.start, $0.end) }
            print("loud sections: \(sections.isEmpty ? "none" : sections.joined(separator: ", "))")
        }
    }
}
