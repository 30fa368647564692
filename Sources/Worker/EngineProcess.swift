import Foundation
import Highlights
import MomentsModel
import MomentsSupport
import Subprocess
import Synchronization
import SystemPackage

/// Runs one attempt's engine work (probe, analysis, render, stills) in a child process, `moments
/// engine`, so that a trap, a runaway allocation or a crash in a library under the engine ends that
/// process and fails its attempt, while the worker, its other jobs and (in `moments dev`) the API
/// carry on.
///
/// The request goes in as one JSON line on the child's standard input, which stays open while the
/// child lives: when this process ends, however it ends, the pipe closes and the child exits at
/// once. Progress and the result come back as JSON lines on its standard output; the last few
/// kilobytes of its standard error are kept for the attempt's diagnostics. Cancelling the calling
/// task sends SIGTERM (the engine stops within a second), then SIGKILL after `grace`.
///
/// Starting a process that loads FFmpeg's libraries takes tens of milliseconds, so `spares`
/// processes are started ahead and wait for their request: an attempt takes one that is ready,
/// and a new one is started behind it.
public final class EngineProcess: Sendable {
    /// The `moments` executable (this one, in the worker).
    public let executable: String
    /// Bytes the child may map beyond what it has when it starts (RLIMIT_AS); nil: no limit.
    public let memoryLimit: Int?
    public let grace: Duration
    /// Processes kept started and waiting (one per slot of the worker is enough).
    public let spares: Int
    private let ready = Mutex<[Standby]>([])

    /// How much of the child's standard error is kept, and the longest line of its output read.
    static let keptErrors = 4096
    static let longestLine = 16 << 20
    /// A child near its memory limit that says nothing for this long is stuck for want of memory
    /// (a thread it waits for could not start): it is killed and its attempt fails out_of_memory.
    static let silenceAtLimit: Duration = .seconds(30)

    public init(executable: String, memoryLimit: Int?, grace: Duration = .seconds(2), spares: Int = 1) {
        self.executable = executable
        self.memoryLimit = memoryLimit
        self.grace = grace
        self.spares = max(0, spares)
        // A request written to a process that died must fail that write, not end this process.
        signal(SIGPIPE, SIG_IGN)
    }

    deinit {
        for standby in ready.withLock({ $0 }) { standby.stop() }
    }

    /// The path of the running executable, for a worker that starts its own engine processes.
    public static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Starts the spare processes now (a worker calls it as it starts, so its first job waits for none).
    public func prepare() {
        let missing = ready.withLock { spares - $0.count }
        guard missing > 0 else { return }
        let started = (0..<missing).map { _ in Standby(self) }
        ready.withLock { $0 += started }
    }

    /// Makes the highlight `request` asks for. Throws the engine's own `MomentsError` (bad media,
    /// cancelled), an `EngineFailure` when the process died or passed its memory limit, or
    /// `CancellationError` when the calling task was cancelled.
    public func highlight(
        _ request: EngineRequest, probed: @escaping @Sendable (Double) -> Void,
        progress: @escaping @Sendable (ProgressUpdate) -> Void
    ) async throws -> HighlightReport {
        var request = request
        request.memoryLimit = memoryLimit
        var line = try JSONEncoder().encode(request)
        line.append(UInt8(ascii: "\n"))
        let assignment = Assignment(line: line, probed: probed, progress: progress)
        let spare = ready.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        prepare()
        do {
            return try await run(assignment, on: spare ?? Standby(self))
        } catch let error as EngineFailure where spare != nil && error == .unavailable {
            // The spare had died while it waited: a fresh one.
            return try await run(assignment, on: Standby(self))
        }
    }

    private func run(_ assignment: Assignment, on standby: Standby) async throws -> HighlightReport {
        try await withTaskCancellationHandler {
            guard let outcome = standby.assign(assignment) else { throw EngineFailure.unavailable }
            return try await outcome.value
        } onCancel: {
            standby.stop()
        }
    }

    /// The work one process is given.
    struct Assignment: Sendable {
        var line: Data
        var probed: @Sendable (Double) -> Void
        var progress: @Sendable (ProgressUpdate) -> Void
    }

    /// One engine process, started and waiting for its one assignment.
    final class Standby: Sendable {
        private let handoff: AsyncStream<Assignment>.Continuation
        private let result: Task<HighlightReport, any Error>

        init(_ engine: EngineProcess) {
            let (assignments, handoff) = AsyncStream.makeStream(of: Assignment.self, bufferingPolicy: .bufferingOldest(1))
            self.handoff = handoff
            let (executable, grace) = (engine.executable, engine.grace)
            result = Task {
                let watch = ChildWatch()
                var options = PlatformOptions()
                options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: grace)]
                let run = try await Subprocess.run(
                    .path(FilePath(executable)), arguments: ["engine"],
                    environment: .inherit.updating([
                        // One malloc arena: each further one reserves 64 MB of address space (128 MB
                        // for a moment as it is made), which would make the memory limit, counted from
                        // the address space at the start, a matter of when threads first allocate. No backtracer:
                        // it takes seconds, while the engine's other threads may carry on, where a
                        // crash should end the process at once (the runtime's own "Fatal error"
                        // line still says where a trap was).
                        "MALLOC_ARENA_MAX": "1",
                        "SWIFT_BACKTRACE": "enable=no",
                    ]),
                    platformOptions: options, input: .inputWriter, output: .sequence, error: .sequence
                ) { execution -> Bool in
                    // Stopped while waiting (shutdown): the body ends, standard input closes, the child exits.
                    guard let assignment = await assignments.first(where: { _ in true }) else { return false }
                    _ = try await execution.standardInputWriter.write(Array(assignment.line))
                    try await Self.follow(execution, watch: watch, assignment: assignment)
                    return true
                }
                handoff.finish()
                guard run.closureResult else { throw CancellationError() }
                try Task.checkCancellation()
                return try watch.outcome(run.terminationStatus)
            }
        }

        /// Gives the process its work; nil when it can take none (it died, or was stopped).
        func assign(_ assignment: Assignment) -> Task<HighlightReport, any Error>? {
            guard case .enqueued = handoff.yield(assignment) else { return nil }
            return result
        }

        /// SIGTERM, then SIGKILL after the grace: the work stops (or the waiting process goes).
        func stop() { result.cancel() }

        /// Reads what the child says until its standard output ends, and its standard error meanwhile.
        static func follow(
            _ execution: Execution<CustomWriteInput, SequenceOutput, SequenceOutput>, watch: ChildWatch,
            assignment: Assignment
        ) async throws {
            let pid = execution.processIdentifier.value
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await chunk in execution.standardError { watch.keepError(chunk.withUnsafeBytes { Array($0) }) }
                }
                group.addTask {
                    // The child's peak address space, read while it lives (its memory limit is on that).
                    while !Task.isCancelled {
                        watch.notePeak(EngineProcess.peakAddressSpace(of: pid))
                        if watch.silentAtLimit(for: EngineProcess.silenceAtLimit) { kill(pid, SIGKILL) }
                        try? await Task.sleep(for: .milliseconds(200))
                    }
                }
                var pending: [UInt8] = []
                for try await chunk in execution.standardOutput {
                    pending += chunk.withUnsafeBytes { Array($0) }
                    while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let message = try? JSONDecoder().decode(EngineMessage.self, from: Data(pending[..<end]))
                        pending.removeSubrange(...end)
                        watch.noteHeard()
                        switch message {
                        case .started: watch.noteStarted()
                        case .limited(let start, let limit): watch.noteLimit(start: start, limit: limit)
                        case .probed(let duration): assignment.probed(duration)
                        case .progress(let update): assignment.progress(update)
                        case .finished, .failed: watch.noteLast(message)
                        case nil: break
                        }
                    }
                    if pending.count > EngineProcess.longestLine { pending.removeAll() }
                }
                // Standard output ended: the child is exiting. Stop watching its memory.
                group.cancelAll()
                try? await group.waitForAll()
            }
        }
    }

    /// VmPeak of process `pid`, bytes (0 once it is gone).
    static func peakAddressSpace(of pid: pid_t) -> Int { LinuxProcess(pid).status("VmPeak") ?? 0 }
}

/// An engine process that died (a signal) or passed its memory limit: the attempt fails with
/// `engine_crashed` or `out_of_memory`, and is retried like any failure that may pass.
public struct EngineFailure: Error, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String
    /// How the process ended and the last lines of its standard error, for operators.
    public var diagnostics: String

    /// A process that could take no work (stopped before it was given any).
    static let unavailable = EngineFailure(
        code: .internalError, message: "The worker could not start its video engine.",
        diagnostics: "the engine process had stopped before it was given its work")
}

/// What the worker learns of a child while it runs.
final class ChildWatch: Sendable {
    private struct State {
        var errors: [UInt8] = []
        var peak = 0
        var started = false
        var limit: (start: Int, limit: Int)?
        var last: EngineMessage?
        var heard = ContinuousClock.now
        var silenced = false

        var nearLimit: Bool {
            limit.map { Double(peak - $0.start) >= EngineMessage.nearLimitShare * Double($0.limit - $0.start) } ?? false
        }
    }
    private let state = Mutex(State())

    func keepError(_ bytes: [UInt8]) {
        state.withLock { state in
            state.errors += bytes
            if state.errors.count > 2 * EngineProcess.keptErrors { state.errors.removeFirst(state.errors.count - EngineProcess.keptErrors) }
        }
    }

    func notePeak(_ bytes: Int) { state.withLock { $0.peak = max($0.peak, bytes) } }
    func noteStarted() { state.withLock { $0.started = true } }
    func noteLimit(start: Int, limit: Int) { state.withLock { $0.limit = (start, limit) } }
    func noteLast(_ message: EngineMessage?) { state.withLock { $0.last = message } }
    func noteHeard() { state.withLock { $0.heard = .now } }

    /// Whether the child has been near its memory limit and silent for `silence` (then it is
    /// taken as stuck there: the caller kills it, and its end is out of memory).
    func silentAtLimit(for silence: Duration) -> Bool {
        state.withLock { state in
            guard !state.silenced, state.last == nil, state.nearLimit, ContinuousClock.now - state.heard >= silence else { return false }
            state.silenced = true
            return true
        }
    }

    /// The highlight, or why there is none. The child's last word decides when it said one; else
    /// how it ended: a signal is a crash, unless it was near its memory limit or said it could not
    /// allocate, which is running out of memory.
    func outcome(_ status: TerminationStatus) throws -> HighlightReport {
        let state = state.withLock { $0 }
        switch state.last {
        case .finished(let report): return report
        case .failed(let code, let message): throw MomentsError(code, message)
        default: break
        }
        // Gone before it took its work (a spare that died while it waited): nothing of the video's.
        guard state.started else { throw EngineFailure.unavailable }
        let errors = String(decoding: state.errors.suffix(EngineProcess.keptErrors), as: UTF8.self)
        let lines = errors.split(separator: "\n", omittingEmptySubsequences: true)
        let tail = lines.suffix(40).map { "\n" + $0 }.joined()
        let how: String
        switch status {
        case .signaled(let signal) where state.silenced:
            how = "silent for \(EngineProcess.silenceAtLimit) near its limit, then killed by \(Self.name(ofSignal: signal))"
        case .signaled(let signal): how = "killed by \(Self.name(ofSignal: signal))"
        case .exited(let code): how = "exited with status \(code) without a result"
        }
        let nearLimit = state.nearLimit
        let lowered = errors.lowercased()
        let couldNotAllocate = ["allocate memory", "out of memory", "bad_alloc", "cannot allocate"].contains { lowered.contains($0) }
        if nearLimit || couldNotAllocate {
            let limit = state.limit.map { " of \(($0.limit - $0.start) >> 20) MB beyond its start" } ?? ""
            return try Self.fail(
                .outOfMemory, "Processing this video needed more memory than a worker allows.",
                "engine process \(how), at its address-space limit\(limit) (peak \(state.peak >> 20) MB)\(tail)")
        }
        throw EngineFailure(
            code: .engineCrashed, message: "The video engine stopped unexpectedly (\(how)).",
            diagnostics: "engine process \(how)\(tail)")
    }

    private static func fail(_ code: ErrorCode, _ message: String, _ diagnostics: String) throws -> HighlightReport {
        throw EngineFailure(code: code, message: message, diagnostics: diagnostics)
    }

    static func name(ofSignal signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGSEGV: "SIGSEGV", SIGKILL: "SIGKILL", SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
            SIGTRAP: "SIGTRAP", SIGFPE: "SIGFPE", SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGPIPE: "SIGPIPE",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}

/// Where a worker runs the engine of each attempt.
public enum EngineIsolation: Sendable {
    /// On a thread of the worker's own process: for tests and tools that run no untrusted input.
    case inProcess
    /// In a child process per attempt, which a crash or a runaway allocation ends alone.
    case childProcess(EngineProcess)
}

/// How much an attempt's engine process may take.
public enum EngineLimits {
    /// Address space an attempt's engine may map beyond what it starts with, in MB
    /// (`WORKER_ATTEMPT_MEMORY_MB`).
    public static let defaultMemoryMB = 2048
}
