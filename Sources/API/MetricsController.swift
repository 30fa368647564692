import Foundation
import Hummingbird
import JobStore
import Jobs
import Prometheus

/// `GET /metrics` in Prometheus's text format: requests by route and status with their latency
/// (this node), and, read at scrape time from the shared stores, the queue (depth, delayed, in
/// flight, dead letters, oldest wait), jobs by status, and the last hour's processing time and
/// real-time factor (the same figures on every node: take one node's, do not sum them).
///
/// With `METRICS_TOKEN` set, a scrape must send `Authorization: Bearer <token>` (401
/// `metrics_token_required` otherwise); the shared stores are read at most once per
/// `refreshInterval` (5 s) however often it is scraped.
struct MetricsController: Sendable {
    let registry: PrometheusCollectorRegistry
    let jobs: Jobs
    let token: String?
    private let refreshed: CachedValue<Void>
    static let refreshInterval: Duration = .seconds(5)

    init(registry: PrometheusCollectorRegistry, jobs: Jobs, store: JobStore, token: String?) {
        self.registry = registry
        self.jobs = jobs
        self.token = token
        refreshed = CachedValue(maxAge: Self.refreshInterval) { await Self.refresh(registry: registry, jobs: jobs, store: store) }
    }

    func addRoutes(to router: Router<MomentsRequestContext>) {
        router.get("metrics") { request, _ in
            try authorize(request)
            await refreshed.value
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    private func authorize(_ request: Request) throws {
        guard let token else { return }
        let sent = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard Self.equalInConstantTime(sent, token) else {
            throw APIError(
                .unauthorized, .metricsTokenRequired, "Scrape /metrics with Authorization: Bearer and the METRICS_TOKEN.",
                headers: [.wwwAuthenticate: #"Bearer realm="metrics""#])
        }
    }

    /// Compares without stopping at the first difference, so timing tells nothing about the token.
    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) { difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
        return difference == 0
    }

    private static func refresh(registry: PrometheusCollectorRegistry, jobs: Jobs, store: JobStore) async {
        if let stats = try? await jobs.stats() {
            registry.makeGauge(name: "moments_queue_ready", help: "Jobs ready to start, not yet taken").set(to: Double(stats.ready))
            registry.makeGauge(name: "moments_queue_delayed", help: "Jobs waiting out a retry delay").set(to: Double(stats.delayed))
            registry.makeGauge(name: "moments_queue_in_flight", help: "Jobs taken by a worker, not yet acknowledged").set(to: Double(stats.inFlight))
            registry.makeGauge(name: "moments_queue_dead_lettered", help: "Jobs given up after their last attempt").set(
                to: Double(stats.deadLettered))
            registry.makeGauge(name: "moments_queue_oldest_ready_seconds", help: "How long the oldest ready job has waited")
                .set(to: stats.oldestReadySeconds)
            registry.makeGauge(name: "moments_queue_paused", help: "1 while the queue is paused (workers take no new jobs)")
                .set(to: stats.paused ? 1 : 0)
        }
        if let counts = try? await store.countsByStatus() {
            for (status, count) in counts {
                registry.makeGauge(name: "moments_jobs", labels: [("status", status.rawValue)], help: "Jobs by status").set(to: Double(count))
            }
        }
        if let workers = try? await store.workers(within: .seconds(3600)) {
            registry.makeGauge(name: "moments_workers_alive", help: "Workers whose registry heartbeat is recent (all API nodes report the same)")
                .set(to: Double(workers.filter(\.alive).count))
            registry.makeGauge(name: "moments_workers_lost", help: "Workers of the last hour whose heartbeats stopped without a clean stop")
                .set(to: Double(workers.filter { $0.state == "lost" }.count))
        }
        if let recent = try? await store.recentProcessing(within: .seconds(3600)) {
            for (quantile, seconds) in [("0.5", recent.p50Seconds), ("0.95", recent.p95Seconds)] {
                registry.makeGauge(
                    name: "moments_processing_seconds", labels: [("quantile", quantile)],
                    help: "Processing time of jobs completed in the last hour (start to end)"
                ).set(to: seconds)
            }
            registry.makeGauge(name: "moments_real_time_factor", help: "Median source seconds per second of processing, last hour")
                .set(to: recent.medianRealTimeFactor)
            registry.makeGauge(name: "moments_completed_last_hour", help: "Jobs completed in the last hour").set(to: Double(recent.completed))
        }
    }
}
