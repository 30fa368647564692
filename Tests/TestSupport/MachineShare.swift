import Foundation
import Testing

/// Who may share this small machine (2 cores) while the whole suite runs in one `swift test`.
///
/// Suites that encode video or run `moments` processes are `.heavy`; suites whose assertions keep
/// time (leases of a second or two, keys that expire, a window that slides) are `.quiet`, and so
/// are suites that call PostgreSQL or serve the API in this process: every job-store call has
/// 10 s, and heavy suites' synchronous tests can hold both of the cooperative pool's threads for
/// longer (a stop's run once saw two job-store calls time out that way); suites
/// that do both (encode, and time how fast a cancel stops it) run `.alone`. Heavy and quiet never
/// run at the same time, so a lease test is never starved by an encoder; heavy suites may run
/// together, as may quiet ones; an `.alone` suite runs with no other tagged suite. Untagged suites
/// (in-process and pure-logic tests) run beside any. Suites are admitted in the order they ask, so
/// no kind waits for ever. Heavy suites run on threads of their own (`HeavyThreads`), so their
/// synchronous tests never hold the threads that the calls other tests wait on need.
public struct MachineShare: SuiteTrait, TestTrait, TestScoping {
    public enum Kind: Sendable { case quiet, heavy, alone }

    public let kind: Kind

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let ticket = await MachineGate.shared.enter(kind, test.displayName ?? test.name)
        do {
            if kind == .heavy {
                try await withTaskExecutorPreference(HeavyThreads.shared) { try await function() }
            } else {
                try await function()
            }
        } catch {
            await MachineGate.shared.leave(ticket)
            throw error
        }
        await MachineGate.shared.leave(ticket)
    }
}

extension Trait where Self == MachineShare {
    /// Keeps time: runs only while no heavy suite runs.
    public static var quiet: Self { MachineShare(kind: .quiet) }
    /// Encodes video or runs processes: runs only while no quiet suite runs.
    public static var heavy: Self { MachineShare(kind: .heavy) }
    /// Encodes and keeps time: runs while no other tagged suite runs.
    public static var alone: Self { MachineShare(kind: .alone) }
}

/// First come, first served between the kinds; any number of quiet or of heavy suites at once.
///
/// With `MOMENTS_TEST_STATE` set, every change is written to that file: which suites hold the
/// machine and which wait (scripts/watch-tests prints it when it stops a run that hangs). With
/// `MOMENTS_TEST_TIMES` set, each suite that leaves adds a line there: seconds held, kind, name
/// (scripts/test prints the longest).
actor MachineGate {
    static let shared = MachineGate()

    private var running: MachineShare.Kind?
    private var tickets = 0
    private var holders: [Int: (name: String, since: Date)] = [:]
    private var waiting: [(kind: MachineShare.Kind, ticket: Int, name: String, resume: CheckedContinuation<Void, Never>)] = []
    private let stateFile = ProcessInfo.processInfo.environment["MOMENTS_TEST_STATE"]
    private let timesFile = ProcessInfo.processInfo.environment["MOMENTS_TEST_TIMES"]

    /// Waits for the suite's turn; the answer is the ticket to leave with.
    func enter(_ kind: MachineShare.Kind, _ name: String) async -> Int {
        tickets += 1
        let ticket = tickets
        if waiting.isEmpty && (holders.isEmpty || (running == kind && kind != .alone)) {
            running = kind
            holders[ticket] = (name, Date())
            writeState()
            return ticket
        }
        await withCheckedContinuation {
            waiting.append((kind, ticket, name, $0))
            writeState()
        }
        return ticket
    }

    func leave(_ ticket: Int) {
        if let timesFile, let holder = holders[ticket], let kind = running {
            let line = String(format: "%.1f", Date().timeIntervalSince(holder.since)) + "\t\(kind)\t\(holder.name)\n"
            if let file = FileHandle(forWritingAtPath: timesFile) {
                file.seekToEndOfFile()
                file.write(Data(line.utf8))
                try? file.close()
            }
        }
        holders[ticket] = nil
        defer { writeState() }
        guard holders.isEmpty, let next = waiting.first?.kind else { return }
        // The next kind in line, and every suite of that kind at the front of the line with it.
        running = next
        while let first = waiting.first, first.kind == next, holders.isEmpty || next != .alone {
            waiting.removeFirst()
            holders[first.ticket] = (first.name, Date())
            first.resume.resume()
        }
    }

    private func writeState() {
        guard let stateFile else { return }
        let held = holders.values.sorted { $0.since < $1.since }.map {
            "  holds (\(running.map { "\($0)" } ?? "?"), since \($0.since.formatted(.iso8601.time(includingFractionalSeconds: false)))): \($0.name)"
        }
        let queued = waiting.map { "  waits (\($0.kind)): \($0.name)" }
        try? (held + queued).joined(separator: "\n").appending("\n").write(toFile: stateFile, atomically: true, encoding: .utf8)
    }
}
