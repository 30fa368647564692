import Foundation
import Hummingbird
import JobQueue
import JobStore
import Logging
import Prometheus
import ServiceLifecycle
import Storage

/// Builds the API: the routes of CLIENT-CONTRACT.md, health checks, one error shape. The job
/// store's connection pool runs as one of the application's services, and the migrations are
/// applied before the server takes requests. `services` run beside it (workers in `moments dev`).
public func buildApplication(configuration: APIConfiguration, store: JobStore, queue: RedisQueue, storage: any ObjectStore,
                             services: [any Service] = [], metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                             logger: Logger) -> some ApplicationProtocol {
    let hub = JobEventsHub()
    let router = buildRouter(configuration: configuration, store: store, queue: queue, storage: storage, hub: hub, metrics: metrics)
    var app = Application(router: router,
                          configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "moments"),
                          services: [store.client, JobEventsListener(store: store, hub: hub, logger: logger)] + services,
                          logger: logger)
    app.beforeServerStarts {
        try await store.migrate()
        try await queue.prepare()
    }
    return app
}

/// Every route of the API. Public so that a test can hold it against `/openapi.yaml`.
public func buildRouter(configuration: APIConfiguration, store: JobStore, queue: RedisQueue, storage: any ObjectStore,
                        hub: JobEventsHub = JobEventsHub(), metrics: PrometheusCollectorRegistry) -> Router<MomentsRequestContext> {
    let router = Router(context: MomentsRequestContext.self)
    router.add(middleware: RequestMetricsMiddleware(registry: metrics))
    router.add(middleware: ErrorMiddleware())
    MetricsController(registry: metrics, store: store, queue: queue).addRoutes(to: router)
    OpenAPIDocument().addRoutes(to: router)
    HealthController(store: store, queue: queue, storage: storage).addRoutes(to: router)
    let quota = Quota(store: store, freeMonthlyHighlights: configuration.freeMonthlyHighlights)
    let limiter = RateLimiter(redis: queue.client, prefix: queue.keys.stream, limits: configuration.rateLimit,
                              trustedProxyHops: configuration.trustedProxyHops)
    let api = router.group("api/v1").add(middleware: AuthenticationMiddleware(store: store, required: configuration.authRequired))
    DevicesController(store: store, quota: quota, limiter: limiter).addRoutes(to: api)
    UploadController(store: store, queue: queue, storage: storage, configuration: configuration, quota: quota, limiter: limiter)
        .addRoutes(to: api)
    JobsController(store: store, queue: queue, storage: storage, configuration: configuration, hub: hub).addRoutes(to: api.group("jobs"))
    DirectUploadController(store: store, queue: queue, storage: storage, configuration: configuration, quota: quota, limiter: limiter)
        .addRoutes(to: api)
    return router
}
