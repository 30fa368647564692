import ArgumentParser
import Foundation
import MomentsModel
import MomentsSupport
import Storage
import Worker

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Takes highlight jobs from the queue and runs them until SIGTERM.",
        discussion: """
            Reads DATABASE_URL, REDIS_URL, STORAGE_URL (and S3_* for S3), WORKER_CONCURRENCY (default 1), \
            WORKER_LEASE_SECONDS (60), WORKER_HEARTBEAT_SECONDS (10), WORKER_SHUTDOWN_GRACE_SECONDS (25), \
            WORKER_STALL_SECONDS (300), WORKER_ATTEMPT_TIMEOUT_SECONDS (7200), WORKER_ATTEMPT_MEMORY_MB (the most memory \
            each attempt's engine process may map beyond its start; default \(EngineLimits.defaultMemoryMB), 0 for no limit) and \
            WORK_DIR (the system's temporary folder), METRICS_PORT (9090; 0 for none), WEBHOOK_SECRET and WEBHOOK_*, \
            DELETE_SOURCE_AFTER_SUCCESS (true), RESULT_RETENTION_DAYS (30), JOB_RETENTION_DAYS (90) and \
            RETENTION_SWEEP_SECONDS (3600), OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_*) for tracing. Applies migrations at start-up. On SIGTERM it stops taking \
            jobs, lets running ones finish within the grace period and gives the others back.
            """)

    func run() async throws {
        try await reportingErrors {
            let environment = try await SettingsSources.load()
            let services = try await Services.fromEnvironment(label: "moments.worker", environment: environment)
            let storage = try StorageConfiguration.store(environment: environment)
            let work = try Self.highlightWork(environment, services: services, storage: storage)
            let telemetry = try Telemetry.bootstrap(environment: environment, serviceName: "moments-worker", logger: services.logger)
            try await services.runWorker(
                work.configuration, handler: work.handler, sweeper: work.sweeper, telemetry: telemetry,
                environment: environment)
        }
    }
}

extension WorkerCommand {
    /// What a highlight worker runs, from the environment: its settings, the highlight job and the
    /// retention sweep (for `moments worker` and `moments dev`).
    static func highlightWork(_ environment: Settings, services: Services, storage: any ObjectStore) throws
        -> (configuration: WorkerConfiguration, handler: HighlightJobHandler, sweeper: RetentionSweeper)
    {
        let (configuration, workDirectory) = try settings(environment)
        let retention = try RetentionConfiguration(environment: environment)
        let memory = try Setting.integer("WORKER_ATTEMPT_MEMORY_MB", in: environment, default: EngineLimits.defaultMemoryMB, range: 0...1_048_576)
        // One engine process started ahead per slot: an attempt takes a ready one.
        let engine = EngineProcess(
            executable: EngineProcess.currentExecutable, memoryLimit: memory == 0 ? nil : memory << 20,
            spares: configuration.concurrency)
        engine.prepare()
        let handler = HighlightJobHandler(
            storage: storage, workDirectory: workDirectory,
            deleteSourceAfterSuccess: retention.deleteSourceAfterSuccess, isolation: .childProcess(engine))
        let sweeper = RetentionSweeper(store: services.store, storage: storage, configuration: retention, logger: services.logger)
        let leftovers = handler.removeLeftovers()
        if !leftovers.isEmpty {
            services.logger.notice(
                "removed work folders of crashed attempts", metadata: ["folders": "\(leftovers)", "work_dir": "\(workDirectory.path)"])
        }
        return (configuration, handler, sweeper)
    }

    /// The worker's settings from the environment, each checked with the variable named.
    static func settings(_ environment: Settings) throws -> (WorkerConfiguration, URL) {
        var configuration = WorkerConfiguration()
        configuration.concurrency = try Setting.integer("WORKER_CONCURRENCY", in: environment, default: 1, range: 1...64)
        configuration.lease = .seconds(try Setting.integer("WORKER_LEASE_SECONDS", in: environment, default: 60, range: 5...3600))
        configuration.heartbeat = .seconds(
            try Setting.integer(
                "WORKER_HEARTBEAT_SECONDS", in: environment, default: 10,
                range: 1...max(1, Int(configuration.lease.components.seconds) / 2)))
        configuration.shutdownGrace = .seconds(try Setting.integer("WORKER_SHUTDOWN_GRACE_SECONDS", in: environment, default: 25, range: 0...3600))
        configuration.stallLimit = .seconds(try Setting.integer("WORKER_STALL_SECONDS", in: environment, default: 300, range: 10...86_400))
        configuration.attemptLimit = .seconds(
            try Setting.integer(
                "WORKER_ATTEMPT_TIMEOUT_SECONDS", in: environment, default: 7200,
                range: 60...86_400))
        let workDirectory = URL(
            fileURLWithPath: environment["WORK_DIR"].flatMap { $0.isEmpty ? nil : $0 }
                ?? FileManager.default.temporaryDirectory.path)
        guard FileManager.default.isWritableFile(atPath: workDirectory.path) else {
            throw SettingError("WORK_DIR (\(workDirectory.path)) is not a folder this worker can write to.")
        }
        return (configuration, workDirectory)
    }
}
