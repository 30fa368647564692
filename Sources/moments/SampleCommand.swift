import ArgumentParser
import Foundation
import Media
import MediaSynth

struct SampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Writes synthetic footage (known cuts, a planted event) made with Moments' own encoder.")

    enum Kind: String, ExpressibleByArgument { case demo, benchmark, phone, phoneHDR = "phone-hdr", subject }

    @Argument(help: "The file to write (.mp4).") var output: String
    @Option(
        help:
            "demo (1 min 720p30), benchmark (1080p30 H.264 at 15 Mbit/s, a cut every 7–13 s), phone (hand-held takes, H.264 with 1 s GOPs, MOV) phone-hdr (the same as an iPhone records it: 10-bit HLG HEVC with open GOPs) or subject (14 s, 640×360, a bright square crossing the frame: try --aspect 9:16)."
    )
    var kind: Kind = .demo
    @Option(help: "Length in minutes of benchmark and phone footage.") var minutes: Double = 5
    @Option(help: "Picture size of phone footage, WIDTHxHEIGHT.") var size: String = "1920x1080"
    @Option(help: "Frame rate of phone footage: 24, 25, 30, 48, 50, 60 or 120 pictures a second.") var fps: Int = 30
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
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (16...7680).contains(parts[0]), (16...7680).contains(parts[1]), parts[0] % 2 == 0, parts[1] % 2 == 0 else {
            throw ValidationError("--size must be WIDTHxHEIGHT with even sides from 16 to 7680, like 1920x1080.")
        }
        guard [24, 25, 30, 48, 50, 60, 120].contains(fps) else {
            throw ValidationError("--fps must be 24, 25, 30, 48, 50, 60 or 120, as phones record.")
        }
        guard fps == 30 || kind == .phone || kind == .phoneHDR else {
            throw ValidationError("--fps is for phone and phone-hdr footage; the other kinds are 30 fps.")
        }
        let video =
            switch kind {
            case .demo: SyntheticVideo.sample
            case .benchmark: SyntheticVideo.benchmark(minutes: minutes)
            case .phone, .phoneHDR:
                SyntheticVideo.phone(
                    minutes: minutes, hdr: kind == .phoneHDR, width: parts[0], height: parts[1],
                    frameRate: fps)
            case .subject: SyntheticVideo.movingSubject
            }
        try video.write(to: output)
        if let truth {
            let kinds = video.scenes.dropFirst().map { scene -> String in
                switch scene.transitionIn {
                case .cut: "cut"
                case .dissolve: "dissolve"
                case .fadeThroughBlack, .fadeThroughWhite: "fade"
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
