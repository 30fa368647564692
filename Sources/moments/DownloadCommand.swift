import ArgumentParser
import Foundation
import MomentsKit

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", abstract: "Downloads a completed job's highlight.")

    @Argument(help: "The job id.")
    var id: String

    @OptionGroup var options: ServerOptions

    @Option(name: .shortAndLong, help: "Where to save it (default: highlight-<job id>.mp4).")
    var output: String?

    func run() async throws {
        try await reportingClientErrors {
            guard let job = UUID(uuidString: id) else { throw ValidationError("'\(id)' is not a job id.") }
            let client = try await options.client(register: false)
            let destination = URL(fileURLWithPath: output ?? "highlight-\(job.uuidString.lowercased()).mp4")
            let bar = TransferBar(label: "Downloading")
            try await client.download(job, to: destination) { bar.show($0) }
            bar.finish()
            print("highlight saved to \(destination.path)")
        }
    }
}
