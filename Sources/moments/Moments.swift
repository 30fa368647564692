import ArgumentParser

@main
struct Moments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moments",
        abstract: "Turns a phone video into a short highlight reel.",
        subcommands: [SampleCommand.self])
}
