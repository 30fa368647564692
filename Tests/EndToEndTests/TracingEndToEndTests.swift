import Foundation
import JobStore
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

/// One job, one trace: the upload request on the API node, the attempt and its stages on the
/// worker, and the webhook, exported over OTLP/HTTP to a collector of the test's own.
@Suite("Tracing (real processes, a local OTLP receiver)", .serialized, .heavy)
struct TracingEndToEndTests {
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

        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
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
                // The app's request id is the request's: on the answer, in the API's log lines and on its span.
                let requestID = "ios-\(UUID().uuidString)"
                let upload = try curl([
                    "-H", "traceparent: \(hostile)", "-H", "X-Request-Id: \(requestID)", "-D", logs.appendingPathComponent("upload.headers").path,
                    "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=5",
                    "-F", "quality=low", "-F", "callback_url=\(endpoint)/hook", "\(base)/api/v1/upload",
                ])
                let answered = try String(contentsOf: logs.appendingPathComponent("upload.headers"), encoding: .utf8)
                #expect(answered.lowercased().contains("x-request-id: \(requestID.lowercased())"), "\(answered)")
                let id = try #require(UUID(uuidString: try CurlAPI.json(upload.body)["job_id"] as? String ?? ""), "\(upload.body)")
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
                #expect(request.attributes["http.request.header.x_request_id"] == requestID, "\(request.attributes)")
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

                let apiLines = try String(contentsOf: logs.appendingPathComponent("api.log"), encoding: .utf8).split(separator: "\n")
                let created = apiLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
                    .first { $0["message"] == "job created" }
                #expect(created?["hb.request.id"] == requestID, "\(String(describing: created))")

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
}
