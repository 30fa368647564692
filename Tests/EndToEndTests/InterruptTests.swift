import Foundation
import MediaSynth
import MediaTestSupport
import MomentsSupport
import ServiceTestSupport
import Synchronization
import Testing

/// `moments highlight` stopped by a signal mid-work: the exit status a shell expects (128 + the
/// signal's number, as `submit` and `status` answer Ctrl-C), the `cancelled` line, and nothing left.
@Suite("Stopping moments highlight")
struct InterruptTests {
    /// Two minutes of small footage: several seconds of work for the signal to land in.
    static func source() throws -> String {
        try Fixtures.path("two-minutes.mp4", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4", frames: 1800))
    }

    @Test(
        "Ctrl-C exits 130 and SIGTERM 143, saying cancelled; no highlight and no partial file is left",
        arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func stopped(signal: Int32, status: Int32) async throws {
        let folder = Fixtures.scratch()
        let output = folder.appendingPathComponent("stopped.mp4").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: momentsBinary)
        process.arguments = ["highlight", try Self.source(), "-o", output, "--poster", folder.appendingPathComponent("p.jpg").path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let said = Mutex("")
        errors.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            said.withLock { $0 += text }
        }
        try process.run()
        // A second of processor time in (of the six or so the whole takes), the signal: its handlers
        // are long in place (they come first) and the work is well under way. A thread of its own
        // watches, not a task: on a machine busy with the whole suite, tasks wait their turn for
        // seconds (and the first stage line reaches this process late), by when the work is done.
        let pid = process.processIdentifier
        let wasRunning = await withCheckedContinuation { continuation in
            Thread {
                while Self.processorTicks(pid) < 100, process.isRunning { usleep(2_000) }
                let running = process.isRunning
                kill(pid, signal)
                continuation.resume(returning: running)
            }.start()
        }
        #expect(wasRunning, "\(said.withLock { $0 })")
        process.waitUntilExit()
        errors.fileHandleForReading.readabilityHandler = nil
        let text = said.withLock { $0 } + String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == status, "\(process.terminationStatus): \(text)")
        #expect(text.contains("error: cancelled: "), "\(text)")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    /// User and system time of process `pid` so far, in clock ticks (100 a second).
    static func processorTicks(_ pid: pid_t) -> Int { LinuxProcess(pid).stat.map { $0.userTicks + $0.systemTicks } ?? 0 }
}
