import API
import Foundation
import Hummingbird
import JobQueue
import JobStore
import Jobs
import Logging
import MomentsModel
import MomentsSupport
import ServiceLifecycle
import Storage
import Worker

/// The shared stores, configured from the environment (what Railway, Render and Kubernetes inject):
/// `DATABASE_URL`, `DATABASE_POOL_SIZE`, `REDIS_URL`, `MOMENTS_QUEUE_PREFIX` (default `moments`), `LOG_LEVEL`.
struct Services {
    let store: JobStore
    let queue: RedisQueue
    let redis: RedisClient
    let logger: Logger

    /// Every job operation, over the store and the queue.
    var jobs: Jobs { Jobs(store: store, queue: queue, logger: logger) }

    /// An operator's controls from the command line (audited as `cli:<user>@<host>`), for
    /// actions that touch no stored object.
    var controls: Operator { Operator(jobs: jobs, storage: nil, actor: Operator.commandLineActor) }

    /// The stores from `environment`, or from the settings `SettingsSources` reads when nil.
    static func fromEnvironment(label: String, environment: Settings? = nil) async throws -> Services {
        let environment = if let environment { environment } else { try await SettingsSources.load() }
        let logger = try makeLogger(label: label, environment: environment)
        guard let databaseURL = environment["DATABASE_URL"], !databaseURL.isEmpty else {
            throw JobStoreError(.invalidConfiguration, "DATABASE_URL is not set (postgres://user:password@host:5432/database).")
        }
        guard let redisURL = environment["REDIS_URL"], !redisURL.isEmpty else {
            throw RedisError(.invalidConfiguration, "REDIS_URL is not set (redis://host:6379/0).")
        }
        var database = try DatabaseConfiguration(url: databaseURL)
        database.maximumConnections = try Setting.integer(
            "DATABASE_POOL_SIZE", in: environment,
            default: DatabaseConfiguration.defaultPoolSize, range: 1...100)
        let store = JobStore(configuration: database, logger: logger)
        let redis = RedisClient(configuration: try RedisConfiguration(url: redisURL), logger: logger)
        let prefix = environment["MOMENTS_QUEUE_PREFIX"].flatMap { $0.isEmpty ? nil : $0 } ?? "moments"
        return Services(
            store: store, queue: RedisQueue(client: redis, keys: QueueKeys(prefix: prefix), logger: logger), redis: redis,
            logger: logger)
    }

    /// What the API stands on: the job service, `storage`, and upload reservations and rate-limit
    /// counters in Redis (under the queue's prefix, where earlier versions kept them).
    func api(storage: any ObjectStore) -> APIServices {
        APIServices(
            store: store, queue: queue, storage: storage, reservations: RedisPersistStore(client: redis, prefix: queue.keys.stream),
            rateLimits: RedisRateLimitStore(client: redis, prefix: queue.keys.stream), logger: logger)
    }

    /// Runs `body` while the database pool runs; stops the pool afterwards.
    func run<T: Sendable>(_ body: @Sendable (Services) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            return try await body(self)
        }
    }

    /// Runs a worker with `handler` until SIGINT or SIGTERM, with the webhook sender beside it and,
    /// unless `METRICS_PORT` is 0, `/metrics` and `/health` on that port (9090 by default).
    /// `telemetry` (the span exporter, when tracing is on) runs first and stops last.
    func runWorker(
        _ configuration: WorkerConfiguration, handler: any JobHandler, sweeper: RetentionSweeper? = nil,
        telemetry: [any Service] = [], environment: Settings
    ) async throws {
        let (service, metrics) = try workerService(configuration, handler: handler, sweeper: sweeper, environment: environment)
        let port = try Setting.integer("METRICS_PORT", in: environment, default: 9090, range: 0...65535)
        guard port > 0 else {
            let group = ServiceGroup(
                configuration: .init(
                    services: telemetry + [JobStoreService(store), service], gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
            return
        }
        let router = Router()
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
        router.get("health") { _, _ in "ok" }
        let app = Application(
            router: router, configuration: .init(address: .hostname("0.0.0.0", port: port), serverName: "moments-worker"),
            services: telemetry + [JobStoreService(store), service], logger: logger)
        try await app.runService()
    }

    /// A worker with the webhook sender and the retention sweep beside it, and its metrics
    /// (`moments worker` serves them alone, `moments dev` beside the API).
    func workerService(
        _ configuration: WorkerConfiguration, handler: any JobHandler, sweeper: RetentionSweeper?,
        environment: Settings
    ) throws -> (WorkerService, WorkerMetrics) {
        let metrics = WorkerMetrics()
        let worker = QueueWorker(configuration: configuration, jobs: jobs, handler: handler, metrics: metrics, logger: logger)
        let webhooks = WebhookDispatcher(store: store, configuration: try WebhookConfiguration(environment: environment), logger: logger)
        let pushes = PushDispatcher(store: store, configuration: try PushConfiguration.from(environment), logger: logger)
        return (WorkerService(worker: worker, webhooks: webhooks, pushes: pushes, sweeper: sweeper, jobs: jobs), metrics)
    }

    static func makeLogger(label: String, environment: Settings) throws -> Logger {
        try LogFormat.bootstrap(environment: environment)
        var logger = Logger(label: label)
        if let text = environment["LOG_LEVEL"], !text.isEmpty {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                throw SettingError("LOG_LEVEL must be one of \(levels), not '\(text)'.")
            }
            logger.logLevel = level
        } else {
            logger.logLevel = .info
        }
        return logger
    }
}

/// A worker, the webhook sender and the retention sweep as a service: migrations first (idempotent, under a lock), then
/// both until graceful shutdown, which becomes the worker's own (stop taking jobs, finish within
/// the grace period, give the rest back).
struct WorkerService: Service {
    let worker: QueueWorker
    let webhooks: WebhookDispatcher
    let pushes: PushDispatcher
    let sweeper: RetentionSweeper?
    let jobs: Jobs

    func run() async throws {
        try await jobs.migrate()
        try await jobs.prepare()
        await cancelWhenGracefulShutdown {
            // All until shutdown cancels them (the push sender returns at once when APNs is not configured).
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await worker.run() }
                group.addTask { await webhooks.run() }
                group.addTask { await pushes.run() }
                if let sweeper { group.addTask { await sweeper.run() } }
            }
        }
    }
}
