import Foundation
import HighlightChecks

/// The generated-input soak of the whole pipeline (`scripts/soak`):
///
///     moments-soak soak --cases N [--seed S] [--workers W] [--regressions DIR] [--scratch DIR] [--budget soak|suite]
///     moments-soak run (--seed S [--budget B] | --case FILE) --folder DIR
///
/// `soak` draws `N` cases from the seed and runs each in a child process (`run`), so a trap, a
/// hang (10 minutes) or a runaway process is a finding, not the end of the soak. Every failing
/// case is made smaller while it still fails the same way, then written to the regression folder
/// as its JSON (the case and what failed) and, when under 1 MB, its source: the test suite replays
/// every one (`GeneratedPipelineTests`).
@main
struct SoakTool {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else { usage() }
        var options: [String: String] = [:]
        var index = 1
        while index < arguments.count {
            guard arguments[index].hasPrefix("--"), index + 1 < arguments.count else { usage() }
            options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        switch command {
        case "run": runOne(options)
        case "soak": try await Soak(options).run()
        case "record": record(options)
        default: usage()
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(
            Data(
                """
                usage: moments-soak soak --cases N [--seed S] [--workers W] [--regressions DIR] [--scratch DIR] [--budget soak|suite]
                       moments-soak run (--seed S [--budget soak|suite] | --case FILE) --folder DIR   (FILE: a case or a finding)
                       moments-soak record --seed S [--budget soak|suite] --regressions DIR --violation TEXT

                """.utf8))
        exit(64)
    }

    /// Writes a case found failing elsewhere (by hand, or by an earlier build) to the regression folder.
    static func record(_ options: [String: String]) {
        guard let seed = options["seed"].flatMap({ UInt64($0, radix: 16) }), let folder = options["regressions"],
            let violation = options["violation"]
        else { usage() }
        let pipelineCase = PipelineCase(seed: seed, budget: PipelineCase.Budget(rawValue: options["budget"] ?? "soak") ?? .soak)
        let soak = Soak(["regressions": folder])
        soak.keep(pipelineCase, violations: [violation])
        print("recorded \(pipelineCase.summary)")
    }

    /// One case in this process: prints one JSON line (`CaseResult`) and exits 0, whatever the
    /// invariants say; a trap ends the process instead, which the soak records.
    static func runOne(_ options: [String: String]) {
        guard let folder = options["folder"] else { usage() }
        let pipelineCase: PipelineCase
        if let file = options["case"] {
            // A case, or a finding of the regression folder.
            guard let data = FileManager.default.contents(atPath: file),
                let decoded = (try? JSONDecoder().decode(PipelineCase.self, from: data))
                    ?? (try? JSONDecoder().decode(PipelineFinding.self, from: data))?.pipelineCase
            else {
                FileHandle.standardError.write(Data("moments-soak: \(file) is not a case\n".utf8))
                exit(66)
            }
            pipelineCase = decoded
        } else if let seed = options["seed"].flatMap({ UInt64($0, radix: 16) }) {
            pipelineCase = PipelineCase(seed: seed, budget: PipelineCase.Budget(rawValue: options["budget"] ?? "soak") ?? .soak)
        } else {
            usage()
        }
        let started = ContinuousClock.now
        let run = PipelineRun(pipelineCase, in: URL(fileURLWithPath: folder))
        FileHandle.standardError.write(Data((pipelineCase.summary + "\n").utf8))
        var violations: [String]
        do {
            try run.writeSource()
            violations = PipelineInvariants(run).violations(of: run.run())
        } catch {
            violations = ["the source could not be written: \(error)"]
        }
        let result = CaseResult(
            seed: String(pipelineCase.seed, radix: 16), violations: violations,
            seconds: (ContinuousClock.now - started).seconds)
        if let line = try? JSONEncoder().encode(result) { print(String(decoding: line, as: UTF8.self)) }
    }
}

/// What one case came to.
struct CaseResult: Codable {
    var seed: String
    var violations: [String]
    var seconds: Double
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
