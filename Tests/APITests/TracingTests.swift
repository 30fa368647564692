import Foundation
import JobStore
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import API

/// Tracing in the API's process: off without an exporter, the request metrics' names, the
/// traceparent a job keeps, the console's trace links (one trace across processes:
/// `TracingEndToEndTests`).
@Suite("Tracing")
struct TracingTests {

    @Test("Without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced: jobs keep no trace context")
    func offByDefault() async throws {
        try await InProcessAPI.run { api in
            let reply = try await api.upload(try InProcessAPI.footage)
            let id = try #require(UUID(uuidString: try reply.json()["job_id"] as? String ?? ""))
            let job = try #require(try await api.store.job(id))
            #expect(job.traceContext == nil && job.traceID == nil)
        }
    }

    @Test("Hummingbird's request metrics keep the names /metrics has always had")
    func requestMetricNames() {
        let (name, labels) = HTTPMetrics.rename(
            "hb.requests",
            [
                ("http.route", "/api/v1/upload"), ("http.request.method", "POST"),
                ("http.response.status_code", "200"),
            ])
        #expect(name == "moments_http_requests_total")
        #expect(labels.map(\.0) == ["route", "method", "status"] && labels.map(\.1) == ["/api/v1/upload", "POST", "200"])
        #expect(HTTPMetrics.rename("http.server.request.duration", []).0 == "moments_http_request_duration_seconds")
        #expect(HTTPMetrics.rename("hb.request.errors", [("error.type", "500")]).1.first! == ("status", "500"))
        #expect(HTTPMetrics.rename("hb.requests", [("http.route", "NotFound")]).1.first!.1 == "unmatched")
        #expect(HTTPMetrics.rename("some.other-metric", [("a.b", "c")]).0 == "some_other_metric")
        #expect(HTTPMetrics.rename("9lives", []).0 == "_9lives")
    }

    @Test("A job's trace id is read from its W3C traceparent, and only from a well-formed one")
    func traceID() {
        #expect(JobRecord.traceID(of: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736")
        for broken in [
            "", "00-4bf92f-00f067aa0ba902b7-01", "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00--4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            #expect(JobRecord.traceID(of: broken) == nil, "\(broken)")
        }
    }

    @Test("TRACE_URL_TEMPLATE must be an http(s) URL with {trace_id}; the console links a job's trace with it")
    func traceURLTemplate() throws {
        let token = ["ADMIN_TOKEN": "admin-token-0123456789abcdef"]
        for bad in ["grafana/explore?trace={trace_id}", "https://grafana.example.com/explore"] {
            let error = #expect(throws: SettingError.self) {
                try APIConfiguration(environment: Settings(token.merging(["TRACE_URL_TEMPLATE": bad]) { $1 }))
            }
            #expect(error?.message.contains("TRACE_URL_TEMPLATE") == true)
        }
        let configuration = try APIConfiguration(
            environment: Settings(
                token.merging(
                    ["TRACE_URL_TEMPLATE": "https://tempo.example.com/trace/{trace_id}"]) { $1 }))
        #expect(configuration.console?.traceURL("abc") == "https://tempo.example.com/trace/abc")
        #expect(configuration.console?.traceURL(nil) == nil)
    }
}
