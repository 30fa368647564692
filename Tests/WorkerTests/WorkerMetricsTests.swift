import Prometheus
import Testing

@testable import Worker

@Suite("Worker metrics: names, help and counts as Prometheus reads them")
struct WorkerMetricsTests {
    static func exposition(_ metrics: WorkerMetrics) -> String {
        var buffer: [UInt8] = []
        metrics.registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test("every outcome's attempt counter is there from the start, at zero, and counts")
    func attempts() {
        let metrics = WorkerMetrics()
        let before = Self.exposition(metrics)
        #expect(before.contains("# HELP moments_job_attempts_total Job attempts this process finished, by outcome"), "\(before)")
        #expect(before.contains("# TYPE moments_job_attempts_total counter"), "\(before)")
        for outcome in WorkerMetrics.Outcome.allCases {
            #expect(before.contains(#"moments_job_attempts_total{outcome="\#(outcome.rawValue)"} 0"#), "\(before)")
        }
        metrics.record(.completed, seconds: 4, sourceDuration: 40)
        metrics.record(.completed, seconds: 2, sourceDuration: 10)
        let after = Self.exposition(metrics)
        #expect(after.contains(#"moments_job_attempts_total{outcome="completed"} 2"#), "\(after)")
        #expect(after.contains(#"moments_job_processing_seconds_count{outcome="completed"} 2"#), "\(after)")
        #expect(after.contains("moments_job_real_time_factor_count 2"), "\(after)")
        #expect(
            after.contains(#"moments_job_real_time_factor_bucket{le="10.0"} 2"#)
                || after.contains(#"moments_job_real_time_factor_bucket{le="10"} 2"#), "\(after)")
    }
}
