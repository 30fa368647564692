import Foundation
import JobQueue
import JobStore
import Logging
import Storage
import Worker

/// The shared stores, configured from the environment (what Railway, Render and Kubernetes inject):
/// `DATABASE_URL`, `REDIS_URL`, `MOMENTS_QUEUE_PREFIX` (default `moments`), `LOG_LEVEL`.
struct Services {
    let store: JobStore
    let queue: RedisQueue
    let logger: Logger

    static func fromEnvironment(label: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Services {
        let logger = makeLogger(label: label, environment: environment)
        guard let databaseURL = environment["DATABASE_URL"], !databaseURL.isEmpty else {
            throw JobStoreError(.invalidConfiguration, "DATABASE_URL is not set (postgres://user:password@host:5432/database).")
        }
        guard let redisURL = environment["REDIS_URL"], !redisURL.isEmpty else {
            throw RedisError(.invalidConfiguration, "REDIS_URL is not set (redis://host:6379/0).")
        }
        let store = JobStore(configuration: try DatabaseConfiguration(url: databaseURL), logger: logger)
        let redis = RedisClient(configuration: try RedisConfiguration(url: redisURL), logger: logger)
        let prefix = environment["MOMENTS_QUEUE_PREFIX"].flatMap { $0.isEmpty ? nil : $0 } ?? "moments"
        return Services(store: store, queue: RedisQueue(client: redis, keys: QueueKeys(prefix: prefix), logger: logger), logger: logger)
    }

    /// Runs `body` while the database pool runs; stops the pool afterwards.
    func run<T: Sendable>(_ body: @Sendable (Services) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            return try await body(self)
        }
    }

    /// Applies migrations, prepares the queue and runs a worker with `handler` until SIGINT or SIGTERM.
    func runWorker(_ configuration: WorkerConfiguration, handler: any JobHandler) async throws {
        try await run { services in
            try await services.store.migrate()
            try await services.queue.prepare()
            let worker = QueueWorker(configuration: configuration, store: services.store, queue: services.queue,
                                     handler: handler, logger: services.logger)
            await runUntilSignalled { await worker.run() }
        }
    }

    static func makeLogger(label: String, environment: [String: String]) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
        return logger
    }
}
