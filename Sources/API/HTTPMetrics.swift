import Dispatch
import HTTPTypes
import Hummingbird
import Metrics
import Prometheus
import Synchronization

/// The request metrics of Hummingbird's `MetricsMiddleware` (recorded by `RequestMetricsMiddleware`), under the names Moments has always
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
            "moments_http_request_duration_seconds": [
                .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500),
                .seconds(2), .seconds(10), .seconds(60),
            ]
        ]
        return factory
    }

    static func rename(_ name: String, _ labels: [(String, String)]) -> (String, [(String, String)]) {
        let renamed = names[name] ?? sanitized(name)
        return (
            renamed,
            labels.map { key, value in
                let key = labelNames[key] ?? sanitized(key)
                // MetricsMiddleware's names for a request no route matched.
                let value = key == "route" && (value == "Unknown" || value == "NotFound") ? "unmatched" : value
                return (key, value)
            }
        )
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

/// Hummingbird's `MetricsMiddleware`, measured the same way and under the same names and labels
/// (which `HTTPMetrics` renames), except where a response is a body already in memory (up to 64 KiB):
/// then the request is recorded when the route returns. Hummingbird's middleware wraps every body
/// to record after its last byte, which turns a one-buffer answer into a streamed one: head and
/// body went out in two writes, a system call more for each status poll. Streams (downloads,
/// Server-Sent Events) are still recorded after their last byte.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache = RequestMetricsCache()
    static var inMemoryLimit: Int { 64 << 10 }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.active(request.method)
        active.increment()
        do {
            var response = try await next(request, context)
            let metrics = cache.endpoint(context.endpointPath ?? "Unknown", request.method, response.status)
            let record: @Sendable () -> Void = {
                metrics.requests.increment()
                metrics.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start)
                active.decrement()
            }
            if let length = response.body.contentLength, length <= Self.inMemoryLimit {
                record()
            } else {
                let body = response.body
                response.body = ResponseBody(contentLength: body.contentLength) { writer in
                    defer { record() }
                    try await body.write(writer)
                }
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.endpoint(context.endpointPath ?? "NotFound", request.method, status)
            metrics.requests.increment()
            metrics.errors.increment()
            active.decrement()
            throw error
        }
    }
}

/// The metric handles of `RequestMetricsMiddleware`, made once per method and per route, method
/// and status.
final class RequestMetricsCache: Sendable {
    struct Endpoint: Sendable {
        let requests: Metrics.Counter
        let duration: Metrics.Timer
        let errors: Metrics.Counter
    }

    private struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: Int
    }

    private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])
    private let endpoints = Mutex<[Key: Endpoint]>([:])

    func active(_ method: HTTPRequest.Method) -> Meter {
        methods.withLock { methods in
            if let meter = methods[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)])
            methods[method] = meter
            return meter
        }
    }

    func endpoint(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Endpoint {
        endpoints.withLock { endpoints in
            let key = Key(route: route, method: method, status: status.code)
            if let endpoint = endpoints[key] { return endpoint }
            let labels = [("http.route", route), ("http.request.method", method.rawValue)]
            let endpoint = Endpoint(
                requests: Metrics.Counter(label: "hb.requests", dimensions: labels + [("http.response.status_code", String(status.code))]),
                duration: Metrics.Timer(
                    label: "http.server.request.duration", dimensions: labels + [("http.response.status_code", String(status.code))],
                    preferredDisplayUnit: .seconds),
                errors: Metrics.Counter(label: "hb.request.errors", dimensions: labels + [("error.type", String(status.code))]))
            endpoints[key] = endpoint
            return endpoint
        }
    }
}
