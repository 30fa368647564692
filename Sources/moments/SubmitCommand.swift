import ArgumentParser
import Foundation
import MomentsContract
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

    @Option(help: "high, medium, low or original (the video's own size, frame rate and HDR).")
    var quality: Quality = .high
    @Option(help: "auto (copy the video's own H.264/HEVC where possible) or h264 (always H.264).")
    var codec: VideoCodecChoice = .auto

    @OptionGroup var choiceOptions: ChoiceOptions

    @Option(
        name: .customLong("metadata"),
        help: ArgumentHelp(
            "A string of your own kept with the job and shown wherever it is (repeat for more; up to 1 KB in all).",
            valueName: "key=value"))
    var metadataPairs: [String] = []

    @Option(help: "An APNs device token (hex, as Xcode's console shows an app's) to get a push when the job ends.")
    var pushToken: String?
    @Option(help: "The push token's APNs environment: sandbox (a development build) or production.")
    var pushEnvironment: APNsEnvironment = .production

    @Flag(
        help:
            "Upload in parts that survive a dropped network or an interrupted run: run the same command again to send only the missing parts (S3 storage)."
    )
    var resumable = false
    @Option(help: "Where resumable uploads keep their state (default: ~/.cache/moments/uploads).")
    var stateDir: String?
    @Option(help: ArgumentHelp("Stop a resumable upload after sending this many parts (exit 75), as an interrupted app would.", visibility: .hidden))
    var stopAfterParts: Int?

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
            let choices = try choiceOptions.choices(target: Double(duration), quality: quality)
            let metadata = try Self.metadata(metadataPairs)
            let push = try pushToken.map(Self.deviceToken)
            let client = try await options.client()
            if let push {
                let registered = try await client.registerPush(deviceToken: push, environment: pushEnvironment)
                print("push: this device's jobs are pushed to \(registered.token.prefix(8))… (\(registered.environment))")
            }
            let bar = TransferBar(label: "Uploading")
            let accepted: UploadAccepted
            if resumable {
                let folder =
                    stateDir.map { URL(fileURLWithPath: $0) }
                    ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/moments/uploads")
                do {
                    accepted = try await client.resumableUpload(
                        file: source, targetDuration: duration, quality: quality, codec: codec, choices: choices,
                        metadata: metadata, options: ResumableUploadOptions(stateDirectory: folder, stopAfterParts: stopAfterParts)
                    ) { bar.show($0) }
                } catch let error as MomentsClientError where error.code == "suspended" {
                    bar.finish()
                    print("stopped: \(error.message)")
                    throw ExitStatus.suspended
                }
            } else {
                accepted = try await client.upload(
                    file: source, targetDuration: duration, quality: quality, codec: codec,
                    choices: choices, metadata: metadata
                ) { bar.show($0) }
            }
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

    /// `--push-token` as bytes: an even number of hex digits.
    static func deviceToken(_ hex: String) throws -> Data {
        let digits = Array(hex.utf8)
        guard digits.count >= 64, digits.count.isMultiple(of: 2),
            let bytes = Optional(
                stride(from: 0, to: digits.count, by: 2).compactMap {
                    UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
                }), bytes.count * 2 == digits.count
        else { throw ValidationError("--push-token takes the APNs device token as hex digits (64 for today's tokens).") }
        return Data(bytes)
    }

    /// `--metadata key=value` options as one object, checked as the server checks it.
    static func metadata(_ pairs: [String]) throws -> [String: String]? {
        var values: [String: String] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "=") else {
                throw ValidationError("--metadata takes key=value, not \(pair).")
            }
            let key = String(pair[..<equals])
            guard values[key] == nil else { throw ValidationError("--metadata names \(key) twice.") }
            values[key] = String(pair[pair.index(after: equals)...])
        }
        do { return try JobMetadata.check(values) } catch { throw ValidationError(error.message) }
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
