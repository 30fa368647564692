import Foundation
import JobStore
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import API

/// One job, one trace: the upload request on the API node, the attempt and its stages on the
/// worker, and the webhook, exported over OTLP/HTTP to a collector of the test's own.
@Suite("Tracing (real processes, a local OTLP receiver)", .serialized, .heavy)
struct TracingTests {
    typealias System = LiveSystem
    static let adminToken = "admin-token-0123456789abcdef"

    @Test("A job's spans from the API node and the worker share one trace id; log lines and the webhook carry it")
    func oneTracePerJob() async throws {
        let receiver = OTLPReceiver()
        await receiver.start()
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("moments-tracing-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: logs) }
        let endpoint = await receiver.endpoint

        try await TestServices.withDatabase { store, databaseURL in
            try await System.withSystem(
                workers: 1,
                settings: [
                    "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200",
                    "WEBHOOK_SECRET": "test-secret-0123456789abcdef", "WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_ALLOWED_PORTS": "*",
                    "LOG_FORMAT": "json", "LOG_LEVEL": "info",
                    "ADMIN_TOKEN": Self.adminToken, "TRACE_URL_TEMPLATE": "https://tempo.example.com/trace/{trace_id}",
                ], databaseURL: databaseURL, logs: logs
            ) { base in
                // A client's traceparent (here: unsampled, which would turn the job's tracing off) is not continued.
                let hostile = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-00"
                let upload = try curl([
                    "-H", "traceparent: \(hostile)", "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=5",
                    "-F", "quality=low", "-F", "callback_url=\(endpoint)/hook", "\(base)/api/v1/upload",
                ])
                let id = try #require(UUID(uuidString: try System.json(upload.body)["job_id"] as? String ?? ""), "\(upload.body)")
                let done = try await TestServices.eventually(timeout: .seconds(90)) { try await store.job(id)?.status == .completed }
                try #require(done, "the job completed")
                let hooked = try await TestServices.eventually(timeout: .seconds(30)) { await !receiver.hooks.isEmpty }
                try #require(hooked, "the webhook arrived")

                // The trace the job row keeps is the one every span of the job is in.
                let traceID = try #require(try await store.job(id)?.traceID, "the job keeps its trace context")
                #expect(traceID != "0123456789abcdef0123456789abcdef", "a trace of its own, not the client's")
                let wanted: Set = [
                    "/api/v1/upload", "job submit", "job attempt", "download", "probe", "analyse", "select", "render",
                    "upload", "webhook job.completed",
                ]
                var spans: [ExportedSpan] = []
                let exported = try await TestServices.eventually(timeout: .seconds(20)) {
                    spans = await receiver.spans.filter { $0.traceID == traceID }
                    return wanted.isSubset(of: Set(spans.map(\.name)))
                }
                #expect(exported, "every span of the job arrived: \(spans)")
                func span(_ name: String) throws -> ExportedSpan { try #require(spans.first { $0.name == name }, "\(name) in \(spans)") }

                let request = try span("/api/v1/upload")
                let submit = try span("job submit")
                let attempt = try span("job attempt")
                #expect(request.service == "moments-api" && submit.service == "moments-api")
                #expect(request.kind == 2 && request.attributes["http.response.status_code"] == "200", "a server span: \(request)")
                #expect(submit.parentSpanID == request.spanID && submit.kind == 4, "a producer span under the request")
                #expect(attempt.service == "moments-worker" && attempt.kind == 5, "a consumer span on the worker")
                #expect(attempt.parentSpanID == submit.spanID, "the attempt continues the stored context")
                #expect(attempt.attributes["moments.job.id"] == id.uuidString.lowercased())
                #expect(attempt.attributes["moments.job.attempt"] == "1" && attempt.attributes["moments.attempt.outcome"] == "completed")
                for stage in ["download", "probe", "analyse", "select", "render", "upload"] {
                    let child = try span(stage)
                    #expect(child.service == "moments-worker" && child.parentSpanID == attempt.spanID, "\(stage) under the attempt")
                    #expect(child.statusCode != 2, "\(stage) did not fail")
                }
                let webhook = try span("webhook job.completed")
                #expect(webhook.service == "moments-worker" && webhook.parentSpanID == submit.spanID && webhook.kind == 3)
                #expect(webhook.attributes["http.response.status_code"] == "200")
                let traceparent = try #require(await receiver.hooks.first?["traceparent"], "the webhook POST carries traceparent")
                #expect(traceparent == "00-\(traceID)-\(webhook.spanID)-01", "the delivery's span: \(traceparent)")

                // The console's job page shows the trace id, linked where TRACE_URL_TEMPLATE says.
                let jar = logs.appendingPathComponent("cookies").path
                let signIn = try curl([
                    "-c", jar, "--data-urlencode", "token=\(Self.adminToken)", "--data-urlencode", "name=tester",
                    "\(base)/admin/login",
                ])
                #expect(signIn.status == 303 || signIn.status == 302, "signed in: \(signIn.status)")
                let page = try curl(["-b", jar, "\(base)/admin/jobs/\(id.uuidString.lowercased())"])
                #expect(page.status == 200 && page.body.contains("https://tempo.example.com/trace/\(traceID)"), "\(page.body.suffix(3000))")

                // Log lines written inside the job's spans name the trace.
                let lines = try String(contentsOf: logs.appendingPathComponent("worker-1.log"), encoding: .utf8).split(separator: "\n")
                let entries = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
                let started = try #require(entries.first { $0["message"] == "job started" }, "\(lines.prefix(20))")
                #expect(started["trace_id"] == traceID && started["span_id"] == attempt.spanID, "\(started)")
                let delivered = try #require(entries.first { $0["message"] == "webhook delivered" })
                #expect(delivered["trace_id"] == traceID && delivered["span_id"] == webhook.spanID)
            }
        }
        await receiver.stop()
    }

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
