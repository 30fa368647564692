import Foundation
import HTTPTypes
import Hummingbird
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// The operator console in headless Chromium, against real `moments api` and `moments worker`
/// processes and the real servers: what an operator does, click by click. Each page's screenshot
/// goes to `.data/screenshots` (not committed).
@Suite("Console in a browser (headless Chromium, real processes)", .serialized, .heavy)
struct ConsoleBrowserTests {
    typealias System = LiveSystem
    static let token = "console-test-token-0123456789abcdef"

    /// Counts the webhook POSTs it gets, by delivery.
    actor Receiver {
        var deliveries: [String] = []
        func record(_ delivery: String) { deliveries.append(delivery) }
    }

    @Test("Sign in, watch a job complete live, filter, open a job, redeliver its webhook, pause and resume, retry, bulk-cancel")
    func operatorSession() async throws {
        let receiver = Receiver()
        let port = Int.random(in: 12_000..<14_000)
        let router = Router()
        router.post("hook") { request, _ -> HTTPResponse.Status in
            await receiver.record(request.headers[HTTPField.Name("Moments-Delivery")!] ?? "")
            return .ok
        }
        let hookServer = Task { try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port))).run() }
        defer { hookServer.cancel() }
        let hook = "http://127.0.0.1:\(port)/hook"

        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await System.withSystem(
                workers: 1,
                settings: [
                    "ADMIN_TOKEN": Self.token, "WEBHOOK_SECRET": "test-secret-0123456789abcdef",
                    "WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_ALLOWED_PORTS": "*",
                ], databaseURL: databaseURL
            ) { base in
                try await Browser.withBrowser { browser in
                    try await Self.session(browser, base: base, store: store, hook: hook, receiver: receiver)
                }
            }
        }
    }

    static func upload(_ base: String, name: String, callback: String? = nil, metadata: String? = nil) throws -> UUID {
        var arguments = [
            "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4;filename=\(name)", "-F", "target_duration=5",
            "-F", "quality=low",
        ]
        if let callback { arguments += ["-F", "callback_url=\(callback)"] }
        if let metadata { arguments += ["--form-string", "metadata=\(metadata)"] }
        let reply = try curl(arguments + ["\(base)/api/v1/upload"])
        guard let id = UUID(uuidString: try CurlAPI.json(reply.body)["job_id"] as? String ?? "") else {
            throw TestFailure("upload refused: \(reply.status) \(reply.body)")
        }
        return id
    }

    static func session(_ browser: Browser, base: String, store: JobStore, hook: String, receiver: Receiver) async throws {
        // Signing in: any console page leads there first.
        try browser.go("\(base)/admin/jobs")
        #expect(try browser.url.hasPrefix("\(base)/admin/login"))
        try browser.screenshot("login")
        try browser.type("#token", "not-the-token-at-all-0123456789")
        try browser.type("#name", "Ann")
        try browser.click("#sign-in-button")
        try await browser.wait("the refusal") { try browser.text("#notice").contains("invalid_admin_token") }
        try browser.type("#token", token)
        try browser.type("#name", "Ann")
        try browser.click("#sign-in-button")
        try await browser.wait("the jobs page after signing in") { try browser.url == "\(base)/admin/jobs" }
        try browser.go("\(base)/admin")
        #expect(try browser.text("header.top").contains("Sign out Ann"))

        // A job appears and completes on the overview without a reload (the marker survives).
        try browser.execute("window.stillTheSamePage = true")
        let first = try upload(base, name: "beach-day.mp4", callback: hook, metadata: #"{"album": "<b>Beach</b>"}"#)
        let row = "#latest tr[data-job=\"\(first.uuidString.lowercased())\"]"
        try await browser.wait("the new job on the overview") { try browser.exists(row) }
        try await browser.wait("the job to complete live", timeout: .seconds(90)) { try browser.text("\(row) .badge") == "completed" }
        #expect(try browser.execute("return window.stillTheSamePage === true") as? Bool == true)
        try await browser.wait("the live figures") { try browser.text("[data-stat=\"status_completed\"]") == "1" }
        try browser.screenshot("overview")

        // Filtering the list by file name and status.
        _ = try upload(base, name: "city-walk.mp4")
        try browser.go("\(base)/admin/jobs")
        try browser.type("#filter-file", "BEACH")
        try browser.select("#filter-status", value: "completed")
        try browser.click("#apply-filters")
        try await browser.wait("the filtered list") { try browser.url.contains("file=BEACH") }
        #expect(try browser.count("#job-rows tbody tr[data-job]") == 1)
        #expect(try browser.text("#filter-summary").contains("status completed"))
        try browser.screenshot("jobs")

        // The job's page: timeline, attempts, its webhook, and a redelivery.
        try browser.click("#job-rows tbody tr[data-job] a")
        try await browser.wait("the job page") { try browser.url.hasSuffix(first.uuidString.lowercased()) }
        #expect(try browser.text("#job-status") == "completed")
        #expect(try browser.text("#timeline").contains("completed"))
        // The app's metadata shown as text, never as markup.
        let fields = try browser.text("dl.fields")
        #expect(fields.contains(#"{"album":"<b>Beach</b>"}"#), "\(fields)")
        try await browser.wait("the first webhook delivered") { await receiver.deliveries.count == 1 }
        try browser.go(try browser.url)
        try browser.screenshot("job")
        try browser.click("#webhooks button.redeliver")
        try await browser.wait("the redelivery notice") { try browser.text("#notice").contains("webhook is due again") }
        try await browser.wait("the webhook sent again", timeout: .seconds(30)) { await receiver.deliveries.count == 2 }
        #expect(Set(await receiver.deliveries).count == 2)

        // Pausing: a job submitted meanwhile waits, then runs after resuming.
        try browser.go("\(base)/admin")
        try browser.click("#queue-toggle-button")
        try await browser.wait("the paused state") { try browser.text("#queue-state") == "Queue paused" }
        #expect(
            try await TestServices.eventually(timeout: .seconds(5)) {
                try CurlAPI.json(try curl(["\(base)/ready?deep=1"]).body)["queue"] as? String == "paused"
            })
        #expect(try curl(["\(base)/metrics"]).body.contains("moments_queue_paused 1"))
        let waits = try upload(base, name: "waits.mp4")
        let failing = try upload(base, name: "to-retry.mp4")
        try await Task.sleep(for: .seconds(3))
        #expect(try await store.job(waits)?.status == .pending)
        // One of them fails (as if its attempts ran out), for the retry below.
        try await store.client.query(
            """
            UPDATE jobs SET status = 'failed', error_code = 'decode_failed', error_message = 'planted by the test', completed_at = now(),
                attempt = max_attempts WHERE id = \(failing)
            """, logger: TestServices.logger)
        try browser.click("#queue-toggle-button")
        try await browser.wait("the running state") { try browser.text("#queue-state") == "Queue running" }
        let ran = try await TestServices.eventually(timeout: .seconds(90)) { try await store.job(waits)?.status == .completed }
        #expect(ran, "the job submitted while paused ran after resuming")

        // Retrying the failed job from its page, through the confirmation.
        try browser.go("\(base)/admin/jobs/\(failing.uuidString.lowercased())")
        #expect(try browser.text("#job-error-code") == "decode_failed")
        try browser.click("#action-retry")
        try await browser.wait("the confirmation") { try browser.exists("#confirm-button") }
        try browser.screenshot("confirm")
        try browser.click("#confirm-button")
        do {
            try await browser.wait("the retry to complete", timeout: .seconds(90)) { try browser.text("#job-status") == "completed" }
        } catch {
            let row = try await store.job(failing)
            throw TestFailure("\(error); in the store the job is \(row?.status.rawValue ?? "gone") at \(row?.progress ?? -1) %")
        }

        // Bulk-cancelling a filtered set (paused, so they wait), with progress in the audit log.
        try browser.go("\(base)/admin")
        try browser.click("#queue-toggle-button")
        try await browser.wait("paused again") { try browser.text("#queue-state") == "Queue paused" }
        let batch = try (1...3).map { try upload(base, name: "party-\($0).mp4") }
        try browser.go("\(base)/admin/jobs?file=party&status=pending")
        #expect(try browser.count("#job-rows tbody tr[data-job]") == 3)
        try browser.click("#bulk-cancel")
        try await browser.wait("the bulk confirmation") { try browser.text("#confirm-text").contains("cancel 3 jobs") }
        try browser.click("#confirm-button")
        try await browser.wait("the bulk action to finish") { try browser.text("#operation-state") == "done" }
        #expect(try browser.text("#operation-counts").contains("3 done"))
        try browser.screenshot("bulk")
        for id in batch { #expect(try await store.job(id)?.status == .cancelled) }
        try browser.go("\(base)/admin")
        try browser.click("#queue-toggle-button")
        try await browser.wait("running again") { try browser.text("#queue-state") == "Queue running" }

        // Workers and the audit log.
        try browser.go("\(base)/admin/workers")
        let state = try browser.text("#workers")
        #expect(try browser.count("#workers tr.worker-alive") == 1, "one live worker on the page: \(state)")
        try browser.screenshot("workers")
        // The music library, as the app's picker lists it.
        let track = MusicTrack(
            title: "Sunny <Day>", artist: "The Band", license: "CC BY 4.0, credit The Band",
            objectKey: "music/none/track.mp3", duration: 95.4, tempo: 118.2)
        try await store.addTrack(track)
        try browser.go("\(base)/admin/music")
        #expect(try browser.count("#music tbody tr[data-track]") == 1)
        let listed = try browser.text("#music tbody tr[data-track='\(track.id.uuidString.lowercased())']")
        for shown in ["Sunny <Day>", "The Band", "1:35", "118 a minute", "CC BY 4.0, credit The Band"] {
            #expect(listed.contains(shown), "\(shown) in \(listed)")
        }
        try browser.screenshot("music")
        try browser.go("\(base)/admin/operations")
        let entries =
            try browser.execute(
                """
                return Array.from(document.querySelectorAll('#operations tbody tr')).map(r => r.cells[2].textContent + ' ' + r.cells[3].textContent)
                """) as? [String] ?? []
        for action in ["pause", "resume", "retry", "redeliver", "cancel"] {
            #expect(entries.contains("console:Ann \(action)"), "\(action) by Ann in the audit log: \(entries)")
        }
        try browser.screenshot("audit-log")

        // Webhook endpoints: added (its secret shown), pinged through a worker, rotated, removed.
        try browser.go("\(base)/admin/webhooks")
        try browser.type("#endpoint-url", hook)
        try browser.type("#endpoint-description", "<b>analytics</b>")
        try browser.click("#add-endpoint button[type=submit]")
        do {
            try await browser.wait("the new endpoint's secret") { try browser.exists("#endpoint-secret") }
        } catch {
            throw TestFailure("\(error); the page says: \(try browser.text("main").prefix(600))")
        }
        let secret = try #require(try browser.text("#endpoint-secret").firstMatch(of: /whsec_[0-9a-f]{64}/)?.output).description
        let endpoint = try #require(try await store.webhookEndpoints().first)
        #expect(endpoint.secret == secret && endpoint.url == hook && endpoint.description == "<b>analytics</b>")
        let endpointRow = "#endpoints tr[data-endpoint='\(endpoint.id.uuidString.lowercased())']"
        #expect(try browser.text(endpointRow).contains("<b>analytics</b>"), "shown as text")
        let before = await receiver.deliveries.count
        try browser.click("\(endpointRow) button.ping")
        try await browser.wait("the ping's answer", timeout: .seconds(30)) { try browser.text("#notice").contains("delivered: HTTP 200") }
        #expect(await receiver.deliveries.count == before + 1)
        try browser.click("\(endpointRow) button.rotate")
        try await browser.wait("the rotated secret") { try browser.exists("#endpoint-secret") }
        #expect(try browser.text("#endpoint-secret").contains(try #require(try await store.webhookEndpoint(endpoint.id)?.secret)))
        #expect(try browser.text(endpointRow).contains("the old secret signs too until"))
        try browser.click("\(endpointRow) button.remove")
        try await browser.wait("the removal") { try browser.text("#notice").contains("The endpoint is removed") }
        #expect(try browser.text(endpointRow).contains("removed") && !(try browser.exists("\(endpointRow) button.ping")))
        try browser.screenshot("webhooks")
    }

    @Test("Without a session, a CSRF token or from another site, the console refuses; without ADMIN_TOKEN it is off")
    func refusals() async throws {
        try await System.withSystem(workers: 0, settings: ["ADMIN_TOKEN": Self.token]) { base in
            let page = try curl(["-D", "-", "-o", "/dev/null", "\(base)/admin/workers"])
            #expect(page.status == 303 && page.body.lowercased().contains("location: /admin/login?next=%2fadmin%2fworkers"))
            let anonymous = try curl(["-X", "POST", "-d", "csrf=x", "\(base)/admin/queue/pause"])
            #expect(anonymous.status == 401 && anonymous.body.contains("console_sign_in_required"))
            #expect(try curl(["\(base)/admin/live"]).status == 401)

            let jar = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString).cookies").path
            defer { try? FileManager.default.removeItem(atPath: jar) }
            let wrong = try curl(["-c", jar, "-d", "token=wrong-token-0123456789abcdefgh&name=Eve", "\(base)/admin/login"])
            #expect(wrong.status == 401)
            #expect(try curl(["-c", jar, "-d", "token=\(Self.token)&name=Bob", "\(base)/admin/login"]).status == 303)
            let overview = try curl(["-b", jar, "\(base)/admin"])
            #expect(overview.status == 200)
            #expect(overview.body.contains("Sign out Bob"))
            let csrf = try #require(overview.body.firstMatch(of: /name="csrf" value="([0-9a-f]{64})"/)?.1)

            let noToken = try curl(["-b", jar, "-X", "POST", "-d", "", "\(base)/admin/queue/pause"])
            #expect(noToken.status == 403 && noToken.body.contains("csrf_token_invalid"))
            let otherToken = try curl(["-b", jar, "-d", "csrf=\(String(repeating: "0", count: 64))", "\(base)/admin/queue/pause"])
            #expect(otherToken.status == 403 && otherToken.body.contains("csrf_token_invalid"))
            let crossSite = try curl(["-b", jar, "-H", "Origin: https://evil.example", "-d", "csrf=\(csrf)", "\(base)/admin/queue/pause"])
            #expect(crossSite.status == 403 && crossSite.body.contains("cross_origin_request"))
            #expect(try curl(["\(base)/ready?deep=1"]).body.contains("\"queue\":\"running\""))

            let headers = try curl(["-b", jar, "-D", "-", "-o", "/dev/null", "\(base)/admin"]).body.lowercased()
            #expect(headers.contains("content-security-policy: default-src 'none'; script-src 'self'"))
            #expect(headers.contains("x-frame-options: deny"))

            let accepted = try curl(["-b", jar, "-d", "csrf=\(csrf)", "\(base)/admin/queue/pause"])
            #expect(accepted.status == 303)
            #expect(
                try await TestServices.eventually(timeout: .seconds(5)) { try curl(["\(base)/ready?deep=1"]).body.contains("\"queue\":\"paused\"") })
        }
        try await System.withSystem(workers: 0) { base in
            let off = try CurlAPI.error(try curl(["\(base)/admin"]))
            #expect(off.status == 404 && off.code == "console_disabled")
        }
    }
}
