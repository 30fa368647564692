import ArgumentParser
import MediaSynth

struct SampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Writes synthetic test footage (known cuts, a planted event) made with Moments' own encoder.")

    enum Kind: String, ExpressibleByArgument { case demo, benchmark }

    @Argument(help: "The file to write (.mp4).") var output: String
    @Option(help: "demo (1 min 720p) or benchmark (1080p30, 15 Mbit/s).") var kind: Kind = .demo
    @Option(help: "Length in minutes of benchmark footage.") var minutes: Double = 5

    func run() throws {
        let video = kind == .demo ? SyntheticVideo.sample : SyntheticVideo.benchmark(minutes: minutes)
        try video.write(to: output)
        print(output)
    }
}
