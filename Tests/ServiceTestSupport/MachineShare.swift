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
/// no kind waits for ever.
public struct MachineShare: SuiteTrait, TestTrait, TestScoping {
    public enum Kind: Sendable { case quiet, heavy, alone }

    public let kind: Kind

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        await MachineGate.shared.enter(kind)
        do {
            try await function()
        } catch {
            await MachineGate.shared.leave()
            throw error
        }
        await MachineGate.shared.leave()
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
actor MachineGate {
    static let shared = MachineGate()

    private var running: MachineShare.Kind?
    private var count = 0
    private var waiting: [(kind: MachineShare.Kind, resume: CheckedContinuation<Void, Never>)] = []

    func enter(_ kind: MachineShare.Kind) async {
        if waiting.isEmpty && (count == 0 || (running == kind && kind != .alone)) {
            running = kind
            count += 1
            return
        }
        await withCheckedContinuation { waiting.append((kind, $0)) }
    }

    func leave() {
        count -= 1
        guard count == 0, let next = waiting.first?.kind else { return }
        // The next kind in line, and every suite of that kind at the front of the line with it.
        running = next
        while let first = waiting.first, first.kind == next, count == 0 || next != .alone {
            waiting.removeFirst()
            count += 1
            first.resume.resume()
        }
    }
}
