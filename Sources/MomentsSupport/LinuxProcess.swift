import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A process as Linux's /proc describes it: its state, parent, processor time, memory and command
/// line. Each answer is read when asked, and is nil (or empty) once the process is gone.
public struct LinuxProcess: Sendable, Hashable {
    public let pid: pid_t

    public init(_ pid: pid_t) {
        self.pid = pid
    }

    /// This process.
    public static var current: LinuxProcess { LinuxProcess(getpid()) }

    /// What /proc/PID/stat says.
    public struct Stat: Sendable, Equatable {
        /// `R` running, `S` sleeping, `T` stopped, `Z` a zombie (dead, not yet reaped), …
        public var state: Character
        public var parent: pid_t
        /// User and system processor time so far, in clock ticks.
        public var userTicks: Int
        public var systemTicks: Int

        /// User and system processor time so far, seconds.
        public var processorSeconds: Double {
            Double(userTicks + systemTicks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    /// /proc/PID/stat: "pid (comm) state ppid … utime stime …". The command may hold spaces and
    /// parentheses, so the fields are read after its last ')'.
    public var stat: Stat? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command: state (1st), parent (2nd), …, utime (12th), stime (13th).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let state = fields[0].first, let parent = pid_t(fields[1]),
            let user = Int(fields[11]), let system = Int(fields[12])
        else { return nil }
        return Stat(state: state, parent: parent, userTicks: user, systemTicks: system)
    }

    /// Gone, or a zombie: dead and waiting to be reaped by whoever holds it now.
    public var isGone: Bool { stat.map { $0.state == "Z" } ?? true }

    /// A `kB` line of /proc/PID/status in bytes: `VmRSS` (resident now), `VmHWM` (the most ever
    /// resident), `VmSize` (address space mapped now), `VmPeak` (the most ever mapped).
    public func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// The processes whose parent this one is.
    public var children: [LinuxProcess] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.map(LinuxProcess.init).filter { $0.stat?.parent == pid }
    }

    /// The command line, arguments joined by spaces ("" once it is gone).
    public var commandLine: String {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return "" }
        return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    /// The paths its open file descriptors lead to.
    public var openFiles: [String] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
    }
}
