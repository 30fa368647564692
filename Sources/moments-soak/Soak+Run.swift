import Foundation
import HighlightChecks
import Synchronization

/// Runs many generated cases, each in a child process, and keeps what fails.
final class Soak: Sendable {
    let cases: Int
    let seed: UInt64
    let workers: Int
    let budget: PipelineCase.Budget
    let regressions: URL?
    let scratch: URL
    /// A case that runs longer than this is a hang.
    let timeout: Double = 600
    static let storedSourceLimit = 1 << 20

    private struct Progress {
        var next = 0
        var done = 0
        var failures: [(PipelineCase, [String])] = []
        var seconds: [Double] = []
    }
    private let progress = Mutex(Progress())

    init(_ options: [String: String]) {
        cases = Int(options["cases"] ?? "") ?? 100
        seed = options["seed"].flatMap { UInt64($0, radix: 16) } ?? UInt64.random(in: 1...UInt64.max)
        workers = max(1, Int(options["workers"] ?? "") ?? 1)
        budget = PipelineCase.Budget(rawValue: options["budget"] ?? "soak") ?? .soak
        regressions = options["regressions"].map { URL(fileURLWithPath: $0) }
        scratch = URL(fileURLWithPath: options["scratch"] ?? FileManager.default.temporaryDirectory.appendingPathComponent("moments-soak").path)
    }

    func run() async throws {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let started = ContinuousClock.now
        print("soak: \(cases) cases from seed \(String(seed, radix: 16)), \(workers) at a time, budget \(budget.rawValue)")
        let threads = (0..<workers).map { worker in
            let thread = Thread { self.work(worker) }
            thread.stackSize = 1 << 20
            thread.start()
            return thread
        }
        while progress.withLock({ $0.done < cases }) { try await Task.sleep(for: .milliseconds(200)) }
        _ = threads
        let elapsed = (ContinuousClock.now - started).seconds
        let (failures, seconds) = progress.withLock { ($0.failures, $0.seconds) }
        let sorted = seconds.sorted()
        let median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        print(String(format: "soak: %d cases in %.0f s (median %.1f s a case), %d failed", cases, elapsed, median, failures.count))
        for (failed, violations) in failures {
            print("  \(failed.summary)")
            for violation in violations.prefix(3) { print("    \(violation)") }
        }
        if !failures.isEmpty { exit(1) }
    }

    /// Takes cases until none are left.
    private func work(_ worker: Int) {
        while true {
            let index: Int? = progress.withLock { state in
                guard state.next < cases else { return nil }
                defer { state.next += 1 }
                return state.next
            }
            guard let index else { return }
            let caseSeed = seed &+ UInt64(index)
            let pipelineCase = PipelineCase(seed: caseSeed, budget: budget)
            let (violations, time) = attempt(pipelineCase, worker: worker)
            if !violations.isEmpty {
                let smallest = shrink(pipelineCase, failingLike: violations, worker: worker)
                keep(smallest.0, violations: smallest.1)
            }
            progress.withLock { state in
                state.done += 1
                state.seconds.append(time)
                if !violations.isEmpty { state.failures.append((pipelineCase, violations)) }
                let line = String(
                    format: "[%d/%d] %@ %.1f s%@", state.done, cases, pipelineCase.summary, time,
                    violations.isEmpty ? "" : "\n    FAILED: " + violations.prefix(3).joined(separator: "\n    "))
                print(line)
                fflush(nil)
            }
        }
    }

    /// One case in a child process: what failed (a trap or a hang is a failure too), and how long it took.
    func attempt(_ pipelineCase: PipelineCase, worker: Int) -> ([String], Double) {
        let folder = scratch.appendingPathComponent("case-\(worker)")
        try? FileManager.default.removeItem(at: folder)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let caseFile = folder.appendingPathComponent("case.json")
        let stdoutFile = folder.appendingPathComponent("stdout"), stderrFile = folder.appendingPathComponent("stderr")
        let started = ContinuousClock.now
        do {
            try JSONEncoder().encode(pipelineCase).write(to: caseFile)
            FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
            FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["run", "--case", caseFile.path, "--folder", folder.appendingPathComponent("run").path]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
            process.standardError = try FileHandle(forWritingTo: stderrFile)
            try process.run()
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return (["the case hung (still running after \(Int(timeout)) s)"], (ContinuousClock.now - started).seconds)
            }
            process.waitUntilExit()
            let time = (ContinuousClock.now - started).seconds
            let errors = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            if process.terminationReason == .uncaughtSignal || process.terminationStatus != 0 {
                let how = process.terminationReason == .uncaughtSignal ? "signal \(process.terminationStatus)" : "exit \(process.terminationStatus)"
                let last = errors.split(separator: "\n").filter { $0.contains("Fatal error") || $0.contains("failure") || $0.contains("error") }
                    .prefix(2)
                return (["the case crashed (\(how))" + (last.isEmpty ? "" : ": " + last.joined(separator: " / "))], time)
            }
            let output = (try? Data(contentsOf: stdoutFile)) ?? Data()
            guard let line = output.split(separator: UInt8(ascii: "\n")).last,
                let result = try? JSONDecoder().decode(CaseResult.self, from: Data(line))
            else {
                return (["the case printed no result"], time)
            }
            return (result.violations, time)
        } catch {
            return (["the case could not be run: \(error)"], (ContinuousClock.now - started).seconds)
        }
    }

    /// The failure's kind: its first sentence with the numbers taken out.
    static func kind(_ violations: [String]) -> String {
        String((violations.first ?? "").map { $0.isNumber || $0 == "." || $0 == "–" ? "#" : $0 })
    }

    /// Smaller versions of a failing case (half the length, half the size), kept while they fail the same way.
    func shrink(_ failing: PipelineCase, failingLike violations: [String], worker: Int) -> (PipelineCase, [String]) {
        var best = (failing, violations)
        let kind = Self.kind(violations)
        for step in 0..<6 {
            let candidate = step % 2 == 0 ? best.0.shorter() : best.0.smaller()
            guard let candidate, candidate != best.0 else { continue }
            let (found, _) = attempt(candidate, worker: worker)
            if Self.kind(found) == kind { best = (candidate, found) }
        }
        return best
    }

    /// Writes a failing case (and its source, when small) to the regression folder.
    func keep(_ failing: PipelineCase, violations: [String]) {
        guard let regressions else { return }
        let name = String(failing.seed, radix: 16)
        try? FileManager.default.createDirectory(at: regressions, withIntermediateDirectories: true)
        let finding = PipelineFinding(pipelineCase: failing, violations: violations)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try? encoder.encode(finding).write(to: regressions.appendingPathComponent("\(name).json"))
        // The source as this machine made it: another machine's encoder may make other bits.
        let folder = scratch.appendingPathComponent("keep-\(name)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = PipelineRun(failing, in: folder)
        if (try? run.writeSource()) != nil, let size = (try? FileManager.default.attributesOfItem(atPath: run.source))?[.size] as? Int,
            size <= Self.storedSourceLimit
        {
            try? FileManager.default.copyItem(atPath: run.source, toPath: regressions.appendingPathComponent(failing.sourceName).path)
        }
    }
}
