import ArgumentParser
import Foundation
import JobQueue
import JobStore
import MomentsModel
import Storage

@main
struct Moments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moments",
        abstract: "Turns a phone video into a short highlight reel.",
        subcommands: [HighlightCommand.self, AnalyzeCommand.self, SampleCommand.self, MigrateCommand.self, WorkerCommand.self, QueueCommand.self])
}

/// Runs `body`; a `MomentsError` becomes one line `error: <code>: <message>` and exit status 1.
func runReportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as MomentsError {
        FileHandle.standardError.write(Data("error: \(error.code.rawValue): \(error.message)\n".utf8))
        throw ExitCode(1)
    }
}

/// The async form: errors of the engine and of the stores become one line `error: <code>: <message>`.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MomentsError {
        FileHandle.standardError.write(Data("error: \(error.code.rawValue): \(error.message)\n".utf8))
        throw ExitCode(1)
    } catch let error as JobStoreError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    } catch let error as RedisError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    } catch let error as StorageError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    } catch let error as SettingError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}
