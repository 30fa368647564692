import Foundation
import MomentsSupport

/// A PostgreSQL 15 cluster of the test's own on a free port, which the test may stop and start
/// again (the shared one of `scripts/services` serves every other test and must stay up). As root
/// it runs as the `postgres` user, as `scripts/services` does.
public final class PrivatePostgres: @unchecked Sendable {
    public let port: Int
    let directory: URL
    static let bin = "/usr/lib/postgresql/15/bin"

    public init() throws {
        port = Int.random(in: 16_000..<20_000)
        directory = URL(fileURLWithPath: "/tmp/moments-pg-\(port)-\(UUID().uuidString.prefix(6).lowercased())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try TestServices.run("/usr/bin/chown", ["postgres:postgres", directory.path]) }
        try asPostgres(
            "\(Self.bin)/initdb",
            [
                "-D", directory.appendingPathComponent("data").path, "-U", "postgres", "--auth=trust",
                "--no-sync", "-E", "UTF8",
            ])
        try start()
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication: a throwaway cluster).
    public var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    public func start() throws {
        try asPostgres(
            "\(Self.bin)/pg_ctl",
            [
                "-D", directory.appendingPathComponent("data").path, "-l", directory.appendingPathComponent("log").path, "-w", "-t", "30",
                "-o", "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=off", "start",
            ])
    }

    /// A fast shutdown: clients are disconnected at once.
    public func stop() throws {
        try asPostgres("\(Self.bin)/pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"])
    }

    /// Freezes the whole server (SIGSTOP to the postmaster, then to every backend), as a frozen
    /// machine or a failover that black-holes the old primary looks to its clients: connections
    /// stay open, statements sent are never answered, new connections are never served.
    public func freeze() {
        let postmaster = self.postmaster
        postmaster.map { _ = kill($0, SIGSTOP) }
        for child in postmaster.map({ LinuxProcess($0).children }) ?? [] { kill(child.pid, SIGSTOP) }
    }

    /// Wakes a frozen server (backends first, then the postmaster).
    public func thaw() {
        let postmaster = self.postmaster
        for child in postmaster.map({ LinuxProcess($0).children }) ?? [] { kill(child.pid, SIGCONT) }
        postmaster.map { _ = kill($0, SIGCONT) }
    }

    /// The postmaster's pid (the first line of `postmaster.pid`).
    var postmaster: pid_t? {
        (try? String(contentsOf: directory.appendingPathComponent("data/postmaster.pid"), encoding: .utf8))
            .flatMap { $0.split(separator: "\n").first }.flatMap { pid_t($0) }
    }

    public func destroy() {
        thaw()
        try? stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func asPostgres(_ tool: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try TestServices.run("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments)
        } else {
            try TestServices.run(tool, arguments)
        }
    }
}
