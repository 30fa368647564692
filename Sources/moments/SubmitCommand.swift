import ArgumentParser
import Foundation
import MomentsKit
import MomentsModel

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Uploads a video to a Moments server and, with --wait, follows it to the downloaded highlight.",
        discussion: """
            Shows the upload (bytes, rate, time left), then the server's progress and sentence, then the download. \
            Ctrl-C while waiting asks whether to cancel the job on the server (without a terminal, the job is left running). \
            Exits 1 with the server's message when the job fails.
            """)

    @Argument(help: "The video to upload.")
    var file: String

    @OptionGroup var options: ServerOptions

    @Option(help: "Length of the highlight in seconds.")
    var duration = HighlightLimits.defaultTargetDuration

    @Option(help: "high, medium or low.")
    var quality: Quality = .high
    @Option(help: "auto (copy the video's own H.264/HEVC where possible) or h264 (always H.264).")
    var codec: VideoCodecChoice = .auto

    @Flag(help: "Wait for the highlight and download it.")
    var wait = false

    @Option(name: .shortAndLong, help: "Where to save the highlight (implies --wait; default: highlight-<job id>.mp4).")
    var output: String?

    func run() async throws {
        try await reportingClientErrors {
            let source = URL(fileURLWithPath: file)
            guard FileManager.default.isReadableFile(atPath: source.path) else {
                throw ValidationError("Cannot read \(file).")
            }
            let client = try await options.client()
            let bar = TransferBar(label: "Uploading")
            let accepted = try await client.upload(file: source, targetDuration: duration, quality: quality, codec: codec) { bar.show($0) }
            bar.finish()
            print("job \(accepted.jobID.uuidString.lowercased()): \(accepted.message)")
            guard wait || output != nil else {
                print("follow it with: moments status \(accepted.jobID.uuidString.lowercased()) --wait")
                return
            }
            let destination = URL(fileURLWithPath: output ?? "highlight-\(accepted.jobID.uuidString.lowercased()).mp4")
            try await StatusCommand.follow(accepted.jobID, client: client, download: destination)
        }
    }
}
