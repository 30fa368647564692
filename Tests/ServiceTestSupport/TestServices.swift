import Foundation
import JobQueue
import Jobs
import Logging

@testable import JobStore

/// The real PostgreSQL, Redis and SeaweedFS that `scripts/services up` started, as `scripts/services env`
/// describes them. Tests never mock them; each test gets its own database or key prefix so tests
/// can run in parallel.
public enum TestServices {
    public struct Missing: Error, CustomStringConvertible {
        public var description: String
    }

    public static let logger: Logger = {
        var logger = Logger(label: "moments.tests")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        return logger
    }()

    public static func environment(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw Missing(
                description: "\(name) is not set: run the tests with scripts/test, which starts the services "
                    + "(or run scripts/services up and eval \"$(scripts/services env)\").")
        }
        return value
    }

    /// The repository's root (for `.build/debug/moments`).
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static var momentsBinary: URL { repository.appendingPathComponent(".build/debug/moments") }

    /// Runs `moments` with `arguments` to the end (in `folder`, when given); its exit status,
    /// standard output and standard error.
    public static func moments(
        _ arguments: [String], environment: [String: String],
        in folder: URL? = nil
    ) throws -> (status: Int32, out: String, err: String) {
        let result = try captured(momentsBinary.path, arguments, environment: environment, in: folder)
        return (result.status, String(decoding: result.output, as: UTF8.self), String(decoding: result.errors, as: UTF8.self))
    }

    // MARK: PostgreSQL

    /// Runs `body` with a job store on a fresh, empty database that is dropped afterwards.
    /// `migrated` applies the migrations first; `callTimeout` is the store's (`LiveSystem.watching`
    /// for a store that only watches a system of processes).
    public static func withDatabase<T: Sendable>(
        migrated: Bool = true, callTimeout: Duration = .seconds(10),
        _ body: @Sendable (JobStore, String) async throws -> T
    ) async throws -> T {
        let url = try environment("DATABASE_URL")
        let admin = JobStore(configuration: try DatabaseConfiguration(url: url), logger: logger)
        let name = "moments_test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await admin.run() }
            defer { group.cancelAll() }
            try await admin.client.query(.init(unsafeSQL: "CREATE DATABASE \(name)"))
            var components = URLComponents(string: url)!
            components.path = "/\(name)"
            let testURL = components.string!
            var configuration = try DatabaseConfiguration(url: testURL)
            configuration.maximumConnections = 20
            configuration.callTimeout = callTimeout
            let store = JobStore(configuration: configuration, logger: logger)
            let result: Result<T, any Error>
            do {
                result = .success(
                    try await withThrowingTaskGroup(of: Void.self) { inner in
                        inner.addTask { await store.run() }
                        defer { inner.cancelAll() }
                        if migrated { try await store.migrate() }
                        return try await body(store, testURL)
                    })
            } catch {
                result = .failure(error)
            }
            // A test database that cannot be dropped (a rare race with autovacuum) is left behind, not a failure.
            for attempt in 1...5 {
                do {
                    try await admin.client.query(.init(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
                    break
                } catch {
                    if attempt < 5 { try await Task.sleep(for: .milliseconds(200)) }
                }
            }
            return try result.get()
        }
    }

    // MARK: Redis

    /// Redis's address; `database` picks one of its 16 databases (tests that flush use their own).
    public static func redisURL(database: Int = 0) throws -> String {
        var components = URLComponents(string: try environment("REDIS_URL"))!
        components.path = "/\(database)"
        return components.string!
    }

    /// A queue under a unique key prefix, whose keys are deleted afterwards.
    public static func withQueue<T: Sendable>(database: Int = 0, _ body: @Sendable (RedisQueue) async throws -> T) async throws -> T {
        let client = RedisClient(
            configuration: try RedisConfiguration(url: try redisURL(database: database)),
            retryFor: .seconds(5), logger: logger)
        let queue = RedisQueue(client: client, keys: QueueKeys(prefix: uniquePrefix()), logger: logger)
        try await queue.prepare()
        let result: Result<T, any Error>
        do { result = .success(try await body(queue)) } catch { result = .failure(error) }
        try? await queue.destroy()
        return try result.get()
    }

    /// Submits `count` jobs (row, then queue) for workers under test; their sources are never read.
    public static func submitJobs(_ store: JobStore, _ queue: RedisQueue, count: Int = 1, maxAttempts: Int = 3) async throws -> [UUID] {
        let jobs = Jobs(store: store, queue: queue, logger: logger)
        var ids: [UUID] = []
        for _ in 0..<count {
            let job = NewJob(sourceKey: "sources/\(UUID()).mp4", maxAttempts: maxAttempts)
            _ = try await jobs.submit(job)
            ids.append(job.id)
        }
        return ids
    }

    /// Empties one of Redis's databases (tests that flush use a database of their own).
    public static func flushRedis(database: Int) async throws {
        let client = RedisClient(configuration: try RedisConfiguration(url: try redisURL(database: database)), logger: logger)
        try await client.send(["FLUSHDB"])
    }

    public static func uniquePrefix() -> String {
        "moments-test-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Waits until `condition` holds, checking every 50 ms, for at most `timeout`.
    public static func eventually(timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    // MARK: Tools

    /// Runs a tool to the end, its output discarded, and throws unless it exits 0. Waits with
    /// `waitpid`: Foundation's `Process.waitUntilExit` was seen never to return (a `runuser` whose
    /// grandchild, the server, lives on; a `mount` left a zombie while the cooperative pool was busy).
    public static func run(_ tool: String, _ arguments: [String]) throws {
        let pid = try spawn(tool, arguments)
        let status = wait(for: pid)
        guard status == 0 else {
            throw TestServices.Missing(description: "\(tool) \(arguments.joined(separator: " ")) exited with status \(status)")
        }
    }

    /// Starts a tool and answers its process id (end it with `kill` and `wait(for:)`). Its standard
    /// output and error go to the files at `output` and `errors` (nil: discarded), `environment` is
    /// added to this process's own, and it runs in `folder` (nil: this process's).
    public static func spawn(
        _ tool: String, _ arguments: [String], environment: [String: String] = [:], output: String? = nil, errors: String? = nil,
        in folder: String? = nil
    ) throws -> pid_t {
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, path) in [(Int32(0), nil), (1, output), (2, errors)] {
            posix_spawn_file_actions_addopen(
                &actions, descriptor, path ?? "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        // Nothing else of this process goes with the child: Foundation's `Process` keeps sockets
        // and pipes of its own children without close-on-exec, and a long-lived child (a test's
        // own server) holding them keeps other tests from seeing their children end.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        // The calling thread (a concurrency or dispatch thread) may block signals, and a child
        // inherits that mask: it would ignore SIGTERM. Start it with none blocked, defaults restored.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        // In another folder: through the shell's `cd` (glibc's addchdir is not in Swift's Glibc).
        let (tool, arguments) = folder.map { ("/bin/sh", ["-c", #"cd "$0" && exec "$@""#, $0, tool] + arguments) } ?? (tool, arguments)
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { variables.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, tool, &actions, &attributes, argv, variables)
        guard result == 0 else {
            throw TestServices.Missing(description: "\(tool) could not be started (error \(result))")
        }
        return pid
    }

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, looked up at run time (Swift's Glibc
    /// module does not declare it); nil on an older C library.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32).self)
    }()

    /// Waits for a spawned process to end and answers its exit code, or the number of the signal
    /// that ended it (as Foundation's `terminationStatus` says).
    @discardableResult
    public static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }
}
