import ArgumentParser
import Foundation
import MomentsModel

@main
struct Moments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moments",
        abstract: "Turns a phone video into a short highlight reel.",
        subcommands: [HighlightCommand.self, AnalyzeCommand.self, SampleCommand.self])
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
