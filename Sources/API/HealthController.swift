import Foundation
import Hummingbird
import JobStore
import Jobs
import ServiceLifecycle
import Storage

/// `GET /health`: the process answers. `GET /ready`: this process can serve (503 `draining` once
/// its graceful shutdown began), which is what a load balancer's readiness probe asks: an outage
/// of PostgreSQL, Redis or storage is every node's, and taking every node out of the service
/// would turn the API's JSON 503 `service_unavailable` into the ingress's HTML page. `GET
/// /ready?deep=1`: PostgreSQL, Redis and storage answer too (503 naming what does not), for
/// people and alerts; it is checked at most once per `readinessMaxAge` (2 s) however often it is
/// asked, so a flood costs the stores nothing, and the answer says when it was checked.
struct HealthController: Sendable {
    let readiness: CachedValue<Readiness>
    static let readinessMaxAge: Duration = .seconds(2)

    init(jobs: Jobs, store: JobStore, storage: any ObjectStore) {
        readiness = CachedValue(maxAge: Self.readinessMaxAge) { await Self.check(jobs: jobs, store: store, storage: storage) }
    }

    struct Health: ResponseEncodable {
        var status: String
        var checks: [String: String]?
        /// When the stores were last asked (ISO 8601 with milliseconds).
        var checkedAt: String?
        /// `running` or `paused` (workers take no new jobs; the API still accepts uploads, so a
        /// paused queue does not make the node unready).
        var queue: String?

        enum CodingKeys: String, CodingKey { case status, checks, queue, checkedAt = "checked_at" }
    }

    struct Readiness: Sendable {
        var checks: [String: Bool]
        /// When the stores were asked, as the answer says it (formatted once per check, not per request).
        var checkedAt: String
        var paused: Bool?
    }

    func addRoutes(to router: Router<MomentsRequestContext>) {
        router.get("health") { _, _ in Health(status: "ok", checks: nil) }
        router.get("ready") { request, _ in
            guard Self.deep(request) else {
                let draining = Task.isShuttingDownGracefully
                return EditedResponse(status: draining ? .serviceUnavailable : .ok, response: Health(status: draining ? "draining" : "ready"))
            }
            let readiness = await readiness.value
            let ready = readiness.checks.values.allSatisfy { $0 }
            let body = Health(
                status: ready ? "ready" : "unavailable", checks: readiness.checks.mapValues { $0 ? "ok" : "unreachable" },
                checkedAt: readiness.checkedAt, queue: readiness.paused.map { $0 ? "paused" : "running" })
            return EditedResponse(status: ready ? .ok : .serviceUnavailable, response: body)
        }
    }

    /// Whether the request asks for the stores' checks (`?deep=1`, or `true`).
    static func deep(_ request: Request) -> Bool {
        guard let value = request.uri.queryParameters.get("deep") else { return false }
        return value == "1" || value.lowercased() == "true"
    }

    private static func check(jobs: Jobs, store: JobStore, storage: any ObjectStore) async -> Readiness {
        async let database = store.isReachable()
        async let redis = jobs.isQueueReachable()
        async let objects = storageReachable(storage)
        async let paused = try? jobs.isPaused()
        return Readiness(
            checks: ["postgresql": await database, "redis": await redis, "storage": await objects],
            checkedAt: Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            paused: await paused)
    }

    private static func storageReachable(_ storage: any ObjectStore) async -> Bool {
        do {
            _ = try await storage.head(key: "health/probe")
            return true
        } catch {
            return error.code == .notFound  // it answered
        }
    }
}
