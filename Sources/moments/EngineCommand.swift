import ArgumentParser
import Foundation
import Highlights
import Media
import MomentsModel
import MomentsSupport
import Synchronization

/// `moments engine`: one attempt's engine work in a process of its own, started by a worker (not
/// for people). It reads one `EngineRequest` line from standard input and writes `EngineMessage`
/// lines to standard output, the last `finished` or `failed`. A trap, a runaway allocation or a
/// signal here ends this process only; the worker records it against the attempt.
///
/// It lives no longer than its worker: standard input is a pipe the worker holds, and when it ends
/// (the worker exited, however it exited, SIGKILL included) this process exits at once. SIGTERM
/// cancels the work, which stops within a second and removes what it wrote.
struct EngineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "engine",
        abstract: "Runs one highlight for the worker that started it (an EngineRequest on standard input).",
        shouldDisplay: false)

    /// Exit status when the worker went away first.
    static let orphaned = ExitStatus.suspended.rawValue

    func run() throws {
        guard let line = readLine(strippingNewline: true),
            let request = try? JSONDecoder().decode(EngineRequest.self, from: Data(line.utf8))
        else {
            FileHandle.standardError.write(Data("moments engine: standard input must start with an engine request (one JSON line)\n".utf8))
            throw ExitStatus.usage
        }
        let messages = EngineMessages()
        messages.send(.started)
        Self.exitWithWorker(messages)
        // Every thread this process needs beyond the engine's own is started before the limit.
        let cancellation = CancellationFlag()
        let stop = SignalCancellation(flag: cancellation)
        defer { stop.restore() }
        let start = Self.addressSpace("VmSize")
        if let growth = request.memoryLimit { messages.send(.limited(start: start, limit: try Self.limitAddressSpace(to: start + growth))) }
        if let info = try? MediaProbe.probe(request.input) { messages.send(.probed(duration: info.duration)) }
        defer {
            // The last word is said and every file written: exit without the libraries' teardown,
            // which the worker would otherwise wait for.
            if messages.isFinished { _exit(0) }
        }
        do throws(MomentsError) {
            let report = try HighlightEngine().highlight(
                input: request.input, output: request.output, settings: request.settings,
                cancellation: cancellation
            ) { messages.send(.progress(update: $0)) }
            messages.finish(.finished(report: report))
        } catch {
            // Near its memory limit, whatever a library called its failure, the memory was the cause.
            if let growth = request.memoryLimit, error.code != .cancelled,
                Double(Self.addressSpace("VmPeak") - start) >= EngineMessage.nearLimitShare * Double(growth)
            {
                messages.finish(
                    .failed(
                        code: .outOfMemory,
                        message: "Processing this video needed more memory than a worker allows "
                            + "(\(growth >> 20) MB); it ended with: \(error.message)"))
            } else {
                messages.finish(.failed(code: error.code, message: error.message))
            }
        }
    }

    /// Watches standard input on a thread of its own: when it ends, the worker is gone, and so is this
    /// process (unless it has already said its last word, which the worker then has).
    static func exitWithWorker(_ messages: EngineMessages) {
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(STDIN_FILENO, &byte, 1)
                // A signal (the backtracer stopping every thread of a crashed process) is not the end.
                if count > 0 || (count < 0 && errno == EINTR) { continue }
                break
            }
            if !messages.isFinished { _exit(orphaned) }
        }
        thread.name = "moments-engine-parent"
        thread.stackSize = 64 << 10
        thread.start()
    }

    /// Lets the process map at most `limit` bytes of address space (RLIMIT_AS); returns it.
    static func limitAddressSpace(to limit: Int) throws -> Int {
        var value = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
        guard setrlimit(Int32(RLIMIT_AS.rawValue), &value) == 0 else {
            throw MomentsError(.internalError, "The engine's memory limit could not be set (errno \(errno)).")
        }
        return limit
    }

    /// `VmSize` (mapped now) or `VmPeak` (the most ever mapped) of this process, bytes.
    static func addressSpace(_ field: String) -> Int { LinuxProcess.current.status(field) ?? 0 }
}

/// Writes `EngineMessage`s, one JSON line each, to standard output: from the engine's thread and
/// this one, never interleaved.
final class EngineMessages: Sendable {
    private let state = Mutex(false)

    var isFinished: Bool { state.withLock { $0 } }

    func send(_ message: EngineMessage) {
        state.withLock { finished in
            guard !finished else { return }
            Self.write(message)
        }
    }

    /// The last message: nothing is written after it.
    func finish(_ message: EngineMessage) {
        state.withLock { finished in
            guard !finished else { return }
            Self.write(message)
            finished = true
        }
    }

    private static func write(_ message: EngineMessage) {
        guard var line = try? JSONEncoder().encode(message) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(line)
    }
}
