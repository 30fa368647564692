import Foundation
import Jobs
import Prometheus

/// What a worker process measures about the jobs it runs, for `/metrics`: the time each attempt
/// took by outcome, the real-time factor of completed jobs (source seconds per second of
/// processing) and attempts by outcome. Per process: sum them across workers.
public final class WorkerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    static let secondsBuckets: [Double] = [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600]
    static let factorBuckets: [Double] = [0.5, 1, 2, 4, 6, 8, 10, 12, 15, 20, 30, 50]

    static var processing: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "moments", metricName: "job_processing", unitName: "seconds",
            helpText: "Wall time of one attempt, from claim to outcome, by outcome")
    }
    static var realTimeFactor: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "moments", metricName: "job_real_time", unitName: "factor",
            helpText: "Source seconds per second of processing, completed jobs")
    }

    /// `moments_job_attempts_total`.
    static var attempts: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "moments", metricName: "job_attempts", unitName: "total",
            helpText: "Job attempts this process finished, by outcome")
    }

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        // Present from the start, so a scrape before the first job sees zeros rather than nothing.
        for outcome in Outcome.allCases { counter(outcome) }
    }

    /// How an attempt ended.
    public typealias Outcome = AttemptEnd

    func record(_ outcome: Outcome, seconds: Double, sourceDuration: Double?) {
        counter(outcome).increment()
        registry.makeValueHistogram(descriptor: Self.processing, labels: [("outcome", outcome.rawValue)], buckets: Self.secondsBuckets)
            .record(seconds)
        if outcome == .completed, let source = sourceDuration, seconds > 0 {
            registry.makeValueHistogram(descriptor: Self.realTimeFactor, buckets: Self.factorBuckets).record(source / seconds)
        }
    }

    @discardableResult
    private func counter(_ outcome: Outcome) -> Counter {
        registry.makeCounter(descriptor: Self.attempts, labels: [("outcome", outcome.rawValue)])
    }
}
