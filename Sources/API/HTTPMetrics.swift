import Metrics
import Prometheus
import Synchronization

/// The request metrics of Hummingbird's `MetricsMiddleware`, under the names Moments has always
/// exported and its dashboards and alerts query: `moments_http_requests_total{route,method,status}`,
/// `moments_http_request_duration_seconds{route,method,status}` (a histogram),
/// `moments_http_request_errors_total{route,method,status}` and
/// `moments_http_active_requests{method}`. A request no route matched is `route="unmatched"`.
public enum HTTPMetrics {
    /// Points swift-metrics at `registry` (what `/metrics` renders), once per process: the
    /// middleware records through the global metrics system. Later calls change nothing.
    public static func bootstrap(registry: PrometheusCollectorRegistry) {
        once.withLock { done in
            guard !done else { return }
            done = true
            MetricsSystem.bootstrap(factory(registry: registry))
        }
    }

    /// A factory over `registry` that renames Hummingbird's metrics (and makes any other
    /// swift-metrics name a valid Prometheus one).
    public static func factory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in rename(name, labels) }
        factory.durationHistogramBuckets = [
            "moments_http_request_duration_seconds": [.milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500),
                                                      .seconds(2), .seconds(10), .seconds(60)],
        ]
        return factory
    }

    static func rename(_ name: String, _ labels: [(String, String)]) -> (String, [(String, String)]) {
        let renamed = names[name] ?? sanitized(name)
        return (renamed, labels.map { key, value in
            let key = labelNames[key] ?? sanitized(key)
            // MetricsMiddleware's names for a request no route matched.
            let value = key == "route" && (value == "Unknown" || value == "NotFound") ? "unmatched" : value
            return (key, value)
        })
    }

    private static let names = [
        "hb.requests": "moments_http_requests_total",
        "http.server.request.duration": "moments_http_request_duration_seconds",
        "hb.request.errors": "moments_http_request_errors_total",
        "http.server.active_requests": "moments_http_active_requests",
    ]

    private static let labelNames = [
        "http.route": "route", "http.request.method": "method", "http.response.status_code": "status", "error.type": "status",
    ]

    /// Prometheus names are `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    private static func sanitized(_ name: String) -> String {
        let characters = name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" }
        let text = String(characters)
        return text.first?.isNumber == true ? "_" + text : text
    }

    private static let once = Mutex(false)
}
