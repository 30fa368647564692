import Foundation
import MomentsSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("What /proc says of a process")
struct LinuxProcessTests {
    @Test("This process: its parent, processor time that grows, memory, its command line")
    func current() throws {
        let me = LinuxProcess.current
        let before = try #require(me.stat)
        #expect(before.parent == getppid())
        // Spend processor time until the clock ticks (10 ms a tick).
        let start = ContinuousClock.now
        var sum = 0.0
        while me.stat.map({ $0.userTicks + $0.systemTicks }) ?? 0 <= before.userTicks + before.systemTicks,
            ContinuousClock.now - start < .seconds(5)
        {
            for value in 0..<100_000 { sum += Double(value).squareRoot() }
        }
        #expect(sum > 0)
        #expect(try #require(me.stat).processorSeconds > before.processorSeconds)
        let resident = try #require(me.status("VmRSS")), peak = try #require(me.status("VmHWM"))
        #expect(resident > 1 << 20 && resident <= peak)
        #expect(try #require(me.status("VmPeak")) >= me.status("VmSize") ?? .max)
        #expect(me.status("NoSuchField") == nil)
        #expect(me.commandLine.contains(CommandLine.arguments[0]))
        #expect(!me.isGone)
    }

    @Test("A child: listed with its command line and open files, sleeping, stopped, gone once killed")
    func child() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("linux-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let held = folder.appendingPathComponent("held (a name with spaces)").path
        // A command whose name holds a space and a parenthesis: stat's fields are read after the last ')'.
        let script = folder.appendingPathComponent("sleep (tested) now").path
        try "#!/bin/sh\nexec 3>\"$1\"\nread line\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = [held]
        let input = Pipe()
        process.standardInput = input
        try process.run()
        let child = LinuxProcess(process.processIdentifier)
        let deadline = ContinuousClock.now + .seconds(10)
        while !child.openFiles.contains(held), ContinuousClock.now < deadline { usleep(10_000) }
        #expect(child.openFiles.contains(held))
        #expect(LinuxProcess.current.children.contains(child))
        #expect(child.stat?.parent == getpid())
        #expect(child.commandLine.contains(script))
        #expect(child.status("VmRSS") != nil)
        #expect(!child.isGone)
        var waiting = false  // for its standard input
        while !waiting, ContinuousClock.now < deadline { waiting = child.stat?.state == "S"; usleep(10_000) }
        #expect(waiting)

        kill(child.pid, SIGSTOP)
        var stopped = false
        while !stopped, ContinuousClock.now < deadline { stopped = child.stat?.state == "T"; usleep(10_000) }
        #expect(stopped)
        kill(child.pid, SIGKILL)
        // Until it is reaped the kernel keeps it as a zombie: dead, and counted gone.
        while !child.isGone, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(child.isGone)
        process.waitUntilExit()
        #expect(child.stat == nil && child.status("VmRSS") == nil && child.commandLine.isEmpty && child.openFiles.isEmpty)
        #expect(!LinuxProcess.current.children.contains(child))
    }
}
