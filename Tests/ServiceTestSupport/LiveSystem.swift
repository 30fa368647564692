import Foundation
import JobStore
import MomentsSupport
import Synchronization

/// The running system as a client sees it: `moments api` and `moments worker` processes against
/// the real PostgreSQL, Redis and SeaweedFS, driven over HTTP with plain curl. For the few
/// end-to-end tests; the API's contract, error and access tests run in process (`InProcessAPI`).
public enum LiveSystem {
    /// How long the test's own job store waits for a call, its migration included, when it only
    /// watches the system (as `TestServices.withDatabase(callTimeout:)`): the heavy suites'
    /// synchronous tests may hold both threads of this process's cooperative pool (2 cores) for
    /// minutes, and a call left waiting that long must not fail the test beside it (fresh-clone
    /// runs did, a read at 10 s and a migration at 120 s). The stores under test, in the `moments`
    /// processes, keep 10 s.
    public static let watching: Duration = .seconds(300)

    /// Starts the API and `workers` workers on a fresh database (or `databaseURL`) and Redis
    /// database 9; stops them after. `settings` are added to the environment (anonymous use
    /// unless they say `AUTH_REQUIRED`). With `logs`, each process writes its standard error to a
    /// file there (`api.log`, `worker-1.log`, …) instead of the test's.
    public static func withSystem(
        maxUploadBytes: Int = 50 << 20, storageURL: String? = nil, workers: Int = 2,
        settings: [String: String] = [:], databaseURL: String? = nil, logs: URL? = nil,
        _ body: @Sendable (String) async throws -> Void
    ) async throws {
        try await withRunningSystem(
            maxUploadBytes: maxUploadBytes, storageURL: storageURL, workers: workers, settings: settings,
            databaseURL: databaseURL, logs: logs
        ) { system in try await body(system.base) }
    }

    /// The same, for a test that starts workers of its own while it runs (after it has seen a job
    /// wait, say).
    public static func withRunningSystem(
        maxUploadBytes: Int = 50 << 20, storageURL: String? = nil, workers: Int = 2,
        settings: [String: String] = [:], databaseURL: String? = nil, logs: URL? = nil,
        _ body: @Sendable (Running) async throws -> Void
    ) async throws {
        @Sendable func start(_ databaseURL: String) async throws {
            var extra = settings
            extra["MAX_UPLOAD_BYTES"] = extra["MAX_UPLOAD_BYTES"] ?? "\(maxUploadBytes)"
            if let storageURL { extra["STORAGE_URL"] = storageURL }
            let environment = try Self.environment(databaseURL: databaseURL, extra)
            let (api, base) = try await Self.startAPI(environment, log: logs?.appendingPathComponent("api.log"))
            let system = Running(base: base, environment: environment, logs: logs, api: api)
            defer { system.stop() }
            for _ in 0..<workers { try system.startWorker() }
            try await body(system)
        }
        if let databaseURL {
            try await start(databaseURL)
        } else {
            // The API migrates the fresh database as it starts, in its own process: a migration
            // here would share this process's two cooperative threads with heavy suites' synchronous
            // tests, and once ran out of its 120 s that way.
            try await TestServices.withDatabase(migrated: false) { _, databaseURL in try await start(databaseURL) }
        }
    }

    /// One running test system: its API's base URL, and workers started on demand.
    public final class Running: Sendable {
        public let base: String
        /// What its processes were started with (the stores, the queue prefix), for a `moments` command to share.
        public let environment: [String: String]
        private let logs: URL?
        private let processes: Mutex<[MomentsProcess]>

        init(base: String, environment: [String: String], logs: URL?, api: MomentsProcess) {
            (self.base, self.environment, self.logs) = (base, environment, logs)
            processes = Mutex([api])
        }

        /// Starts one more `moments worker` (its log, with `logs`, is `worker-N.log`).
        public func startWorker() throws {
            try processes.withLock { processes in
                let log = logs?.appendingPathComponent("worker-\(processes.count).log")
                processes.append(try MomentsProcess(["worker"], environment: environment, log: log))
            }
        }

        func stop() { processes.withLock { $0.forEach { $0.stop() } } }
    }

    /// What every process of one test system shares: the stores, a queue prefix of its own, a free
    /// port, anonymous use and no worker metrics port, then `settings`.
    public static func environment(databaseURL: String, _ settings: [String: String] = [:]) throws -> [String: String] {
        [
            "DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 9),
            "MOMENTS_QUEUE_PREFIX": TestServices.uniquePrefix(), "PORT": apiPort(), "HOST": "127.0.0.1",
            "LOG_LEVEL": "warning", "WORKER_CONCURRENCY": "1", "AUTH_REQUIRED": "false", "METRICS_PORT": "0",
        ].merging(settings) { $1 }
    }

    /// A port for a test system's API, picked at random (not reserved).
    static func apiPort() -> String { "\(Int.random(in: 20_000..<30_000))" }

    /// Starts `moments api` and waits until it is ready; returns it and its base URL. The port is
    /// picked at random, not reserved: when another process holds it (the API exits, "Address
    /// already in use"), the API is started again on another, three times at most.
    /// `command`: `api`, or `dev` (the API and a worker in one process).
    public static func startAPI(_ environment: [String: String], log: URL? = nil, command: String = "api") async throws -> (MomentsProcess, String) {
        var environment = environment
        for attempt in 1...3 {
            if attempt > 1 { environment["PORT"] = apiPort() }
            let api = try MomentsProcess([command], environment: environment, log: log)
            let base = "http://127.0.0.1:\(environment["PORT"] ?? "")"
            let ready = try await TestServices.eventually(timeout: .seconds(30)) {
                !api.isRunning || (try? curl(["\(base)/ready"]).status) == 200
            }
            if ready && api.isRunning { return (api, base) }
            api.stop()
            guard ready else { throw TestFailure("the API did not become ready within 30 s") }
        }
        throw TestFailure("the API exited at start on three ports in turn (see its log)")
    }

    /// Uploads the 20 s footage for a 15 s highlight and waits until a worker is mid-job.
    public static func uploadAndWaitUntilMidJob(_ base: String, store: JobStore) async throws -> UUID {
        let upload = try curl([
            "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=15",
            "-F", "quality=high", "\(base)/api/v1/upload",
        ])
        guard let id = UUID(uuidString: try CurlAPI.json(upload.body)["job_id"] as? String ?? "") else {
            throw TestFailure("the upload was refused: \(upload.status) \(upload.body)")
        }
        let working = try await TestServices.eventually(timeout: .seconds(60)) {
            try await store.job(id).map { $0.status == .processing && $0.progress >= 5 } ?? false
        }
        guard working else { throw TestFailure("no worker got to 5 % of job \(id) within 60 s") }
        return id
    }

    /// Downloads job `id`'s highlight through the API (following a redirect to storage) and
    /// returns the status and the duration ffprobe reads (-1 when there is no file).
    public static func downloadedDuration(_ base: String, id: UUID, headers: [String] = []) throws -> (status: Int, duration: Double) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-download-\(id)-\(UUID().uuidString.prefix(6)).mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        let status = try curl(headers + ["-L", "-o", file.path, "\(base)/api/v1/jobs/\(id)/download"]).status
        return (status, FileManager.default.fileExists(atPath: file.path) ? try TestFootage.duration(file.path) : -1)
    }
}

/// A `moments` subcommand as a separate process.
public final class MomentsProcess: @unchecked Sendable {
    private let process: Process

    /// Standard error goes to `log` when given (created or emptied), else to the test's.
    public init(_ arguments: [String], environment: [String: String], log: URL? = nil) throws {
        if let log { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let logHandle = try log.map { try FileHandle(forWritingTo: $0) }
        process = try Process.launched { process in
            process.executableURL = TestServices.momentsBinary
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
            if let logHandle { process.standardError = logHandle }
        }
    }

    public var isRunning: Bool { process.isRunning }

    public var pid: pid_t { process.processIdentifier }

    /// The engine processes this worker runs now (`moments engine`, one per attempt).
    public var engineChildren: [pid_t] { LinuxProcess(pid).children.filter { $0.commandLine.contains("engine") }.map(\.pid) }

    /// The engine process working on job `id` (the one with that job's work folder open).
    public func engineChild(workingOn id: UUID) -> pid_t? {
        let folder = "moments-job-\(id.uuidString.lowercased())-"
        return engineChildren.first { LinuxProcess($0).openFiles.contains { $0.contains(folder) } }
    }

    /// SIGTERM: what an orchestrator sends first.
    public func terminate() { process.terminate() }

    /// SIGSTOP freezes the process (to the rest of the system, a partition: it neither renews nor
    /// answers); SIGCONT lets it go on where it was.
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
    }

    deinit { stop() }
}
