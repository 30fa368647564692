import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import JobStore
import Jobs
import Logging
import MomentsModel
import MomentsSupport
import Prometheus
import ServiceLifecycle
import Storage

/// What the API stands on: the job service (PostgreSQL and the queue), object storage, and the
/// stores shared by every API node (upload reservations, rate-limit counters). Production wires
/// Redis and S3 (`moments api`); tests may wire the in-memory drivers of `Jobs`.
public struct APIServices: Sendable {
    /// Every change to a job (submit, cancel, retry, pause) goes through here.
    public let jobs: Jobs
    /// What the API reads, and keeps beside the jobs: devices, uploads, music, job pages, the audit.
    public let store: JobStore
    public var storage: any ObjectStore
    public var reservations: any PersistStore
    public var rateLimits: any RateLimitStore

    public init(
        store: JobStore, queue: any JobQueueDriver, storage: any ObjectStore, reservations: any PersistStore,
        rateLimits: any RateLimitStore, logger: Logger
    ) {
        self.store = store
        self.jobs = Jobs(store: store, queue: queue, logger: logger)
        self.storage = storage
        self.reservations = reservations
        self.rateLimits = rateLimits
    }
}

/// Builds the API: the routes of docs/client-contract.md, health checks, one error shape. The job
/// store's connection pool runs as one of the application's services, and the migrations are
/// applied before the server takes requests. `background` runs beside it (workers in `moments dev`);
/// `telemetry` (the span exporter) runs first, so that it stops last. `metrics` is what `/metrics`
/// renders: the request metrics land there once `HTTPMetrics.bootstrap(registry:)` named it.
public func buildApplication(
    configuration: APIConfiguration, services: APIServices, background: [any Service] = [],
    telemetry: [any Service] = [], metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger
) -> some ApplicationProtocol {
    buildApplication(
        configuration: configuration, services: services, background: background, telemetry: telemetry, metrics: metrics,
        logger: logger, routes: { _ in })
}

/// `buildApplication`, with `routes` adding routes of a test's own to the router.
func buildApplication(
    configuration: APIConfiguration, services: APIServices, background: [any Service] = [],
    telemetry: [any Service] = [], metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger, routes: (Router<MomentsRequestContext>) -> Void
) -> some ApplicationProtocol {
    let hub = JobEventsHub()
    let router = buildRouter(configuration: configuration, services: services, hub: hub, metrics: metrics)
    routes(router)
    let store = services.store
    var own: [any Service] = [JobStoreService(store), JobEventsListener(store: store, hub: hub, logger: logger)]
    if configuration.console != nil {
        // Bulk actions started in the console run here, on whichever API node claims them.
        own.append(BulkRunnerService(runner: BulkRunner(jobs: services.jobs, storage: services.storage, name: BulkRunnerService.nodeName())))
    }
    var app = Application(
        router: router, server: apiServer(configuration: configuration, store: store, logger: logger),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
        services: telemetry + own + background,
        logger: logger)
    app.beforeServerStarts {
        // Uploads spooled by an API process that died mid-request (nothing written for an hour).
        let leftovers = Leftovers.remove(in: configuration.uploadDirectory, prefix: "moments-upload-", olderThan: 3600)
        if !leftovers.isEmpty {
            logger.notice(
                "removed uploads of a crashed process", metadata: ["files": "\(leftovers)", "upload_dir": "\(configuration.uploadDirectory.path)"])
        }
        try await store.migrate()
        try await services.jobs.prepare()
    }
    return app
}

/// The API's HTTP/1 server: the status poll is answered before the router (`StatusPollHandler`)
/// unless `STATUS_FAST_PATH` is false.
public func apiServer(configuration: APIConfiguration, store: JobStore, logger: Logger) -> HTTPServerBuilder {
    let polls = statusFastPath(configuration: configuration, store: store, logger: logger)
    return .http1(configuration: .init(additionalChannelHandlers: polls.map { [$0.handler()] } ?? []))
}

/// The status poll's fast path, which gives each connection its handler; nil when it is off.
func statusFastPath(configuration: APIConfiguration, store: JobStore, logger: Logger) -> StatusPollRoute? {
    configuration.statusFastPath ? StatusPollRoute(store: store, configuration: configuration, serverName: serverName, logger: logger) : nil
}

/// The `Server` header of every answer.
public let serverName = "moments"

/// Every route of the API. Public so that a test can hold it against `/openapi.yaml`, or call it in process.
public func buildRouter(
    configuration: APIConfiguration, services: APIServices, hub: JobEventsHub = JobEventsHub(),
    metrics: PrometheusCollectorRegistry
) -> Router<MomentsRequestContext> {
    let store = services.store
    let router = Router(context: MomentsRequestContext.self)
    // Outermost: the request's id, then its span (a new trace, unless incoming ones are trusted; none when
    // tracing is off), then its metrics (`HTTPMetrics` names them), then errors turned into responses.
    router.add(middleware: RequestIdentifierMiddleware())
    if configuration.tracing {
        if !configuration.continueIncomingTraces { router.add(middleware: IncomingTraceMiddleware()) }
        router.add(middleware: TracingMiddleware(recordingHeaders: [RequestIdentifier.header]))
    }
    router.add(middleware: RequestMetricsMiddleware())
    let errors = ErrorMiddleware<MomentsRequestContext>()
    router.add(middleware: errors)
    router.add(middleware: RateLimitHeadersMiddleware())
    MetricsController(registry: metrics, jobs: services.jobs, store: store, token: configuration.metricsToken).addRoutes(to: router)
    OpenAPIDocument().addRoutes(to: router)
    HealthController(jobs: services.jobs, store: store, storage: services.storage).addRoutes(to: router)
    let quota = Quota(jobs: services.jobs, freeMonthlyHighlights: configuration.freeMonthlyHighlights)
    let idempotency = Idempotency(jobs: services.jobs)
    let limiter = RateLimiter(store: services.rateLimits, limits: configuration.rateLimit, trustedProxyHops: configuration.trustedProxyHops)
    let api = router.group("api/v1").add(middleware: AuthenticationMiddleware(store: store, required: configuration.authRequired))
    DevicesController(
        store: store, quota: quota, limiter: limiter, jobs: services.jobs, storage: services.storage, pushEnabled: configuration.pushEnabled
    ).addRoutes(to: api)
    UploadController(
        store: store, storage: services.storage, configuration: configuration, quota: quota, idempotency: idempotency, limiter: limiter
    ).addRoutes(to: api)
    MusicController(store: store).addRoutes(to: api)
    let playback = PlaybackLinks(
        storage: services.storage, lifetime: configuration.playbackLinkLifetime, secret: configuration.urlSigningSecret)
    let jobs = JobsController(
        jobs: services.jobs, store: store, storage: services.storage, configuration: configuration, hub: hub, playback: playback)
    jobs.addRoutes(to: api.group("jobs"))
    jobs.addStatusRoute(to: router, authRequired: configuration.authRequired)
    jobs.addPlaybackRoute(to: router)
    DirectUploadController(
        store: store, reservations: services.reservations, storage: services.storage, configuration: configuration,
        quota: quota, idempotency: idempotency, limiter: limiter
    ).addRoutes(to: api)
    if let console = configuration.console {
        ConsoleController(
            jobs: services.jobs, store: store, storage: services.storage,
            keys: ConsoleKeys(token: console.adminToken, lifetime: console.sessionLifetime), limiter: limiter, hub: hub,
            linkLifetime: configuration.downloadLinkLifetime, traceURL: console.traceURL,
            secureCookie: configuration.publicURL?.hasPrefix("https://") ?? false, callbacks: configuration.callbacks
        ).addRoutes(to: router)
    } else {
        let off: @Sendable (Request, MomentsRequestContext) async throws -> Response = { _, _ in
            throw APIError(.notFound, .consoleDisabled, "The operator console is off: set ADMIN_TOKEN on the API to turn it on.")
        }
        router.get("admin", use: off)
        router.get("admin/**", use: off)
    }
    errors.routes.record(router.routes)
    return router
}

/// The job store's connection pools (`JobStore.run()`) as a service of a process.
public struct JobStoreService: Service {
    let store: JobStore

    public init(_ store: JobStore) { self.store = store }

    public func run() async { await store.run() }
}

/// Runs an API node's `BulkRunner` until graceful shutdown.
struct BulkRunnerService: Service {
    let runner: BulkRunner

    func run() async throws {
        await cancelWhenGracefulShutdown { await runner.serve() }
    }

    /// `api-<host>-<pid>-xxxx`: this node in `admin_operations.runner`.
    static func nodeName() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "api"
        return "api-\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(4).lowercased())"
    }
}

/// Drops a request's trace propagation headers (`traceparent`, `tracestate`, `baggage`) before
/// `TracingMiddleware` reads them, so that each request from the public starts a trace of ours.
struct IncomingTraceMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard propagationHeaders.contains(where: { request.headers[$0] != nil }) else { return try await next(request, context) }
        var head = request.head
        for name in propagationHeaders { head.headerFields[values: name] = [] }
        return try await next(Request(head: head, body: request.body), context)
    }
}

private let propagationHeaders: [HTTPField.Name] = ["traceparent", "tracestate", "baggage"].compactMap { HTTPField.Name($0) }
