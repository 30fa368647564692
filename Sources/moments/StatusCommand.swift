import ArgumentParser
import Foundation
import MomentsContract
import MomentsKit

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Shows a job's status on a Moments server; --wait follows it to the end.")

    @Argument(help: "The job id.")
    var id: String

    @OptionGroup var options: ServerOptions

    @Flag(help: "Follow the job until it ends.")
    var wait = false

    @Flag(help: "Print the job's details as JSON.")
    var json = false

    func run() async throws {
        try await reportingClientErrors {
            guard let job = UUID(uuidString: id) else { throw ValidationError("'\(id)' is not a job id.") }
            let client = try await options.client(register: false)
            if wait {
                try await Self.follow(job, client: client, download: nil)
            } else if json {
                print(String(decoding: try MomentsJSON.encoder.encode(try await client.details(of: job)), as: UTF8.self))
            } else {
                let details = try await client.details(of: job)
                let report = details.report
                print("\(report.status.rawValue) \(report.progress)% \(report.message ?? "")")
                if let stage = details.stage { print("stage: \(stage)") }
                if let url = report.resultURL { print("result: \(url)") }
                if let code = details.errorCode { print("error: \(code)") }
            }
        }
    }

    /// Shows the job's progress until it ends; downloads the highlight to `download` when it completes.
    /// Ctrl-C asks whether to cancel the job (on a terminal).
    static func follow(_ job: UUID, client: MomentsClient, download destination: URL?) async throws {
        let interrupt = Interrupt()
        defer { interrupt.restore() }
        let bar = TransferBar(label: "Processing")
        let watcher = Task { () throws -> JobStatusReport? in
            var last: JobStatusReport?
            for try await report in client.updates(of: job, pollInterval: .seconds(1)) {
                last = report
                bar.showPercent(report.progress, note: report.message ?? report.status.rawValue)
            }
            return last
        }
        let outcome = await interrupt.race(watcher)
        bar.finish()
        guard case .finished(let result) = outcome else {
            watcher.cancel()
            let id = job.uuidString.lowercased()
            if Interrupt.askToCancel() {
                let report = try await client.cancel(job)
                FileHandle.standardError.write(Data("job \(id) \(report.status.rawValue)\n".utf8))
            } else {
                FileHandle.standardError.write(Data("job \(id) keeps running; follow it with: moments status \(id) --wait\n".utf8))
            }
            throw ExitStatus.interrupted(by: SIGINT)
        }
        guard let report = try result.get() else {
            throw MomentsClientError(kind: .invalidResponse, code: "invalid_response", message: "No status arrived.")
        }
        switch report.status {
        case .completed:
            print("completed: \(report.message ?? "")")
            // A link to watch it in a browser or player, without the token (servers of 1.2 on).
            if let links = try? await client.playback(of: job) {
                print("watch (until \(MomentsJSON.format(links.expiresAt))): \(links.playbackURL)")
            }
            guard let destination else { return }
            let bar = TransferBar(label: "Downloading")
            try await client.download(job, to: destination) { bar.show($0) }
            bar.finish()
            print("highlight saved to \(destination.path)")
        case .failed, .cancelled:
            FileHandle.standardError.write(Data("error: \(report.status.rawValue): \(report.message ?? "The job ended without a highlight.")\n".utf8))
            throw ExitStatus.failure
        case .pending, .processing:
            throw MomentsClientError(kind: .invalidResponse, code: "invalid_response", message: "The status stream ended before the job did.")
        }
    }
}
