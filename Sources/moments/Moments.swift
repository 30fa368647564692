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
        subcommands: [
            HighlightCommand.self, AnalyzeCommand.self, MusicCommand.self, SampleCommand.self, MigrateCommand.self, APICommand.self,
            WorkerCommand.self, DevCommand.self, QueueCommand.self, JobsCommand.self, WebhooksCommand.self, HealthCommand.self,
            SubmitCommand.self, StatusCommand.self, DownloadCommand.self, EngineCommand.self,
        ])

    /// ArgumentParser's entry, after `moments api` has put its tasks on the event loops (which
    /// must happen before any task starts).
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "api" { EventLoopExecutor.takeOver() }
        await main(nil)
    }
}

/// Every command's exit status but success's 0 (docs/cli.md has the table).
enum ExitStatus {
    /// It could not: one line `error: <code>: <message>` says why.
    static let failure = ExitCode(1)
    /// The command line or its input was not what the command takes (ArgumentParser's own, and
    /// `moments engine`'s without its request).
    static let usage = ExitCode.validationFailure
    /// Stopped on purpose and can go on later (a resumable upload stopped after its parts, an
    /// engine whose worker went away).
    static let suspended = ExitCode(75)

    /// Stopped by `signal` (SIGINT is Ctrl-C): 128 + its number, as a shell reports it.
    static func interrupted(by signal: Int32) -> ExitCode { ExitCode(128 + signal) }
}

/// Runs `body`; a `CodedError` becomes one line `error: <code>: <message>` and exit status 1, or,
/// when a signal cancelled the work, 128 + the signal's number (130 for Ctrl-C).
func runReportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as any CodedError {
        throw exitStatus(reporting: error)
    }
}

/// The async form: every `CodedError` (engine, stores, settings) becomes one line `error: <code>: <message>`.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as any CodedError {
        throw exitStatus(reporting: error)
    }
}

private func exitStatus(reporting error: any CodedError) -> ExitCode {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    if error.codeName == ErrorCode.cancelled.rawValue, let signal = SignalCancellation.received { return ExitStatus.interrupted(by: signal) }
    return ExitStatus.failure
}
