import Foundation
import Hummingbird
import JobStore
import Jobs
import Storage

/// `GET /health`: the process answers. `GET /ready`: PostgreSQL, Redis and storage answer too
/// (503 naming what does not).
struct HealthController: Sendable {
    let jobs: Jobs
    let storage: any ObjectStore

    struct Health: ResponseEncodable {
        var status: String
        var checks: [String: String]?
    }

    func addRoutes(to router: Router<MomentsRequestContext>) {
        router.get("health") { _, _ in Health(status: "ok", checks: nil) }
        router.get("ready") { _, _ in
            async let database = jobs.store.isReachable()
            async let redis = jobs.isQueueReachable()
            async let objects = storageReachable()
            let checks = ["postgresql": await database, "redis": await redis, "storage": await objects]
            let ready = checks.values.allSatisfy { $0 }
            let body = Health(status: ready ? "ready" : "unavailable", checks: checks.mapValues { $0 ? "ok" : "unreachable" })
            return EditedResponse(status: ready ? .ok : .serviceUnavailable, response: body)
        }
    }

    private func storageReachable() async -> Bool {
        do {
            _ = try await storage.head(key: "health/probe")
            return true
        } catch {
            return error.code == .notFound  // it answered
        }
    }
}
