import API
import ArgumentParser
import Foundation
import MomentsModel

@main
struct Moments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moments",
        abstract: "Turns a phone video into a short highlight reel.",
        version: MomentsVersion.current,
        subcommands: [HighlightCommand.self, AnalyzeCommand.self, SampleCommand.self, MigrateCommand.self, APICommand.self, WorkerCommand.self, DevCommand.self, QueueCommand.self, JobsCommand.self, WebhooksCommand.self, HealthCommand.self,
                      SubmitCommand.self, StatusCommand.self, DownloadCommand.self, EngineCommand.self])

    /// ArgumentParser's entry, after `moments api` has put its tasks on the event loops (which
    /// must happen before any task starts).
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "api" { EventLoopExecutor.takeOver() }
        await main(nil)
    }
}

/// Runs `body`; a `CodedError` becomes one line `error: <code>: <message>` and exit status 1.
func runReportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as any CodedError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

/// The async form: every `CodedError` (engine, stores, settings) becomes one line `error: <code>: <message>`.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as any CodedError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}
