import ArgumentParser
import Foundation
import Media
import MediaSynth

struct SampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Writes synthetic footage (known cuts, a planted event) made with Moments' own encoder.")

    enum Kind: String, ExpressibleByArgument { case demo, benchmark }

    @Argument(help: "The file to write (.mp4).") var output: String
    @Option(help: "demo (1 min 720p30) or benchmark (1080p30 H.264 at 15 Mbit/s).") var kind: Kind = .demo
    @Option(help: "Length in minutes of benchmark footage.") var minutes: Double = 5
    @Option(help: "Write the ground truth (scene changes, events) as JSON here.") var truth: String?
    @Option(help: "Instead of making footage, join this many copies of --from (stream copy).") var repeatCount: Int?
    @Option(help: "The file to repeat.") var from: String?

    func run() throws {
        FFmpegLog.quiet()
        if let repeatCount {
            guard let from else { throw ValidationError("--repeat-count needs --from FILE.") }
            try Concatenation.repeatFile(from, times: repeatCount, to: output)
            print(output)
            return
        }
        let video = kind == .demo ? SyntheticVideo.sample : SyntheticVideo.benchmark(minutes: minutes)
        try video.write(to: output)
        if let truth {
            let kinds = video.scenes.dropFirst().map { scene -> String in
                switch scene.transitionIn {
                case .cut: "cut"
                case .dissolve: "dissolve"
                case .fadeThroughBlack: "fade"
                }
            }
            let document: [String: Any] = [
                "frame_rate": video.frameRate,
                "duration": video.duration,
                "changes": zip(video.boundaryTimes, kinds).map { ["time": $0, "kind": $1] },
                "events": video.eventTimes.map { ["start": $0.lowerBound, "end": $0.upperBound] },
            ]
            try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
                .write(to: URL(fileURLWithPath: truth))
        }
        print(output)
    }
}
