import CurlHTTP
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import Logging
import MomentsContract
import MomentsModel
import MomentsSupport
import NIOCore
import Storage

/// The operator console at `/admin`: server-rendered pages (Mustache), a little plain JS for live
/// updates over one SSE stream, its own sign-in (`ADMIN_TOKEN`), a CSRF token on every form that
/// changes something, and every action through `Operator` (the same code as the command line),
/// which writes the audit log.
struct ConsoleController: Sendable {
    let jobs: Jobs
    let store: JobStore
    let storage: any ObjectStore
    let keys: ConsoleKeys
    let views: ConsoleViews
    let limiter: RateLimiter
    let hub: JobEventsHub
    let linkLifetime: Duration
    /// Where a job's trace id links to (`TRACE_URL_TEMPLATE`).
    let traceURL: @Sendable (String?) -> String?
    /// Whether the session cookie is marked Secure (the API is served over HTTPS).
    let secureCookie: Bool
    /// Where a webhook endpoint may point (`WEBHOOK_ALLOW_PRIVATE`, `WEBHOOK_ALLOWED_PORTS`).
    let callbacks: DestinationPolicy
    private let figures: CachedValue<ConsoleFigures>

    init(
        jobs: Jobs, store: JobStore, storage: any ObjectStore, keys: ConsoleKeys, limiter: RateLimiter, hub: JobEventsHub, linkLifetime: Duration,
        traceURL: @escaping @Sendable (String?) -> String? = { _ in nil }, secureCookie: Bool,
        callbacks: DestinationPolicy = DestinationPolicy()
    ) {
        self.callbacks = callbacks
        self.jobs = jobs
        self.store = store
        self.storage = storage
        self.keys = keys
        self.views = ConsoleViews()
        self.limiter = limiter
        self.hub = hub
        self.linkLifetime = linkLifetime
        self.traceURL = traceURL
        self.secureCookie = secureCookie
        figures = CachedValue(maxAge: .seconds(2)) { await ConsoleFigures.read(jobs, store) }
    }

    func addRoutes(to router: Router<MomentsRequestContext>) {
        let admin = router.group("admin").add(middleware: ConsoleMiddleware(keys: keys, views: views))
        admin.get("static/:file") { _, context in try asset(context) }
        admin.get("login") { request, context in signInPage(request, context: context) }
        admin.post("login") { request, context in try await signIn(request, context: context) }
        admin.post("logout") { _, _ in signOut() }
        admin.get { request, context in try await overview(request, context: context) }
        admin.get("charts") { request, _ in try await charts(request) }
        admin.get("live") { _, context in try await live(context) }
        admin.get("jobs") { request, context in try await jobList(request, context: context) }
        admin.get("jobs/rows") { request, _ in try await jobRows(request) }
        admin.get("jobs/find") { request, _ in try await find(request) }
        admin.get("jobs/:id") { request, context in try await jobPage(request, context: context) }
        admin.get("jobs/:id/summary") { _, context in try await jobSummary(context) }
        admin.get("jobs/:id/confirm") { request, context in try await confirmJobAction(request, context: context) }
        admin.post("jobs/:id/:action") { request, context in try await jobAction(request, context: context) }
        admin.get("bulk") { request, context in try await confirmBulk(request, context: context) }
        admin.post("bulk") { request, context in try await startBulk(request, context: context) }
        admin.get("operations") { request, context in try await operations(request, context: context) }
        admin.get("operations/:number") { _, context in try await operationPage(context) }
        admin.get("operations/:number/progress") { _, context in try await operationProgress(context) }
        admin.post("operations/:number/stop") { request, context in try await stopOperation(request, context: context) }
        admin.post("queue/:action") { request, context in try await queueAction(request, context: context) }
        admin.post("webhooks/:number/redeliver") { request, context in try await redeliver(request, context: context) }
        admin.get("workers") { _, context in try await workers(context) }
        admin.get("workers/rows") { _, _ in try await workerRows() }
        admin.get("music") { _, context in try await music(context) }
        admin.get("webhooks") { request, context in try await webhookEndpoints(context, notice: Self.notice(FormFields(request.uri.query ?? ""))) }
        admin.post("webhooks/endpoints") { request, context in try await addEndpoint(request, context: context) }
        admin.post("webhooks/endpoints/:id/:action") { request, context in try await endpointAction(request, context: context) }
    }

    // MARK: Signing in

    private func asset(_ context: MomentsRequestContext) throws -> Response {
        guard let name = context.parameters.get("file"), let asset = ConsoleViews.assets[name] else {
            throw APIError(.notFound, .notFound, "There is no console file by that name.")
        }
        var headers = ConsoleViews.securityHeaders
        headers[.contentType] = asset.type
        headers[.cacheControl] = "private, max-age=300"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }

    private func signInPage(
        _ request: Request, context: MomentsRequestContext, next: String? = nil, notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        if context.consoleSession != nil, notice == nil { return redirect("/admin") }
        let next = (next ?? FormFields(request.uri.query ?? "")["next"]).flatMap(Self.safeNext) ?? "/admin"
        return views.page("login", title: "Sign in", session: nil, notice: notice, status: status, ["next": next])
    }

    private func signIn(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        try await limiter.admitSignIn(request, context: context)
        let form = try await Self.form(request, context: context)
        guard let token = form["token"], keys.isToken(token) else {
            context.logger.warning("console sign-in refused: wrong admin token")
            return signInPage(
                request, context: context, next: form["next"], notice: "That is not the admin token (invalid_admin_token).",
                status: .unauthorized)
        }
        guard let name = form["name"], name.count <= 40,
            name.allSatisfy({ $0.isLetter || $0.isNumber || " ._@-".contains($0) })
        else {
            return signInPage(
                request, context: context, next: form["next"],
                notice: "Give your name, up to 40 letters, digits, spaces or . _ @ - (invalid_operator_name).", status: .badRequest)
        }
        let cookie = keys.newSession(name: name)
        context.logger.notice("operator signed in to the console", metadata: ["operator": "\(name)"])
        var response = redirect(form["next"].flatMap(Self.safeNext) ?? "/admin")
        response.setCookie(
            Cookie(
                name: ConsoleKeys.cookieName, value: cookie, maxAge: Int(keys.lifetime.inSeconds), path: "/admin",
                secure: secureCookie, httpOnly: true, sameSite: .strict))
        return response
    }

    private func signOut() -> Response {
        var response = redirect("/admin/login")
        response.setCookie(
            Cookie(
                name: ConsoleKeys.cookieName, value: "", maxAge: 0, path: "/admin", secure: secureCookie, httpOnly: true,
                sameSite: .strict))
        return response
    }

    /// Only a path inside the console (never `//host`, which a browser reads as another site).
    static func safeNext(_ next: String) -> String? {
        next.hasPrefix("/admin") && !next.hasPrefix("//") && !next.contains("\\") ? next : nil
    }

    // MARK: Overview

    private func overview(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")
        let range = try Self.range(query)
        let figures = await figures.value
        let chartContext = ConsolePages.charts(try await store.throughput(range), range: range)
        let latest = try await store.listJobs(JobFilter(), limit: 10)
        var stats = figures.values
        stats["toggle_action"] = figures.paused ? "resume" : "pause"
        stats["toggle_label"] = figures.paused ? "Resume the queue" : "Pause the queue"
        stats["statuses"] = JobStatus.allCases.map { ["name": $0.rawValue, "count": figures.counts[$0] ?? 0] }
        return views.page(
            "overview", title: "Overview", session: context.consoleSession, nav: "overview", paused: figures.paused,
            notice: Self.notice(query),
            [
                "stats": stats, "range": range.rawValue,
                "ranges": ThroughputRange.allCases.map { ["name": $0.rawValue, "current": $0 == range] },
                "charts": views.render("charts", chartContext),
                "latest": views.render("job_rows", ["jobs": latest.jobs.map(ConsolePages.jobRow)]),
            ])
    }

    private func charts(_ request: Request) async throws -> Response {
        let range = try Self.range(FormFields(request.uri.query ?? ""))
        return views.fragment("charts", ConsolePages.charts(try await store.throughput(range), range: range))
    }

    static func range(_ query: FormFields) throws(APIError) -> ThroughputRange {
        guard let text = query["range"] else { return .hour }
        guard let range = ThroughputRange(rawValue: text) else {
            throw APIError(.badRequest, .invalidRange, "'\(text)' is not a chart range: use hour, day or week.")
        }
        return range
    }

    /// The live stream: `tick` with the figures every 2 s, `job` with the id of each job that changes.
    private func live(_ context: MomentsRequestContext) async throws -> Response {
        guard let (token, changes) = await hub.watchEverything() else {
            throw APIError(
                .tooManyRequests, .tooManyStreams,
                "Too many console streams are open on this node (at most \(JobEventsHub.everythingLimit)). Close a console tab.")
        }
        let hub = self.hub, figures = self.figures
        enum Event: Sendable { case tick, job(UUID) }
        let body = ResponseBody { writer in
            let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await id in changes { continuation.yield(.job(id)) }
                        continuation.finish()
                    }
                    group.addTask {
                        while !Task.isCancelled {
                            continuation.yield(.tick)
                            try await Task.sleep(for: .seconds(2))
                        }
                    }
                    defer { group.cancelAll() }
                    for await event in events {
                        switch event {
                        case .tick:
                            try await writer.write(ByteBuffer(string: "event: tick\ndata: \(await figures.value.json)\n\n"))
                        case .job(let id):
                            try await writer.write(ByteBuffer(string: "event: job\ndata: \(id.uuidString.lowercased())\n\n"))
                        }
                    }
                }
            } catch {
                await hub.stopWatchingEverything(token)
                throw error
            }
            await hub.stopWatchingEverything(token)
            try await writer.finish(nil)
        }
        var headers = ConsoleViews.securityHeaders
        headers[.contentType] = "text/event-stream"
        return Response(status: .ok, headers: headers, body: body)
    }

    // MARK: Jobs

    private func jobList(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")
        let filter = try JobFilter(fields: query)
        let cursor = try Self.cursor(query)
        let page = try await store.listJobs(filter, after: cursor, limit: 50)
        let encoded = FormFields.encode(filter.fields)
        let figures = await figures.value
        return views.page(
            "jobs", title: "Jobs", session: context.consoleSession, nav: "jobs", paused: figures.paused,
            notice: Self.notice(query),
            [
                "statuses": JobStatus.allCases.map { ["name": $0.rawValue, "selected": filter.statuses == [$0]] },
                "filter": Dictionary(uniqueKeysWithValues: filter.fields), "summary": filter.summary, "query": encoded,
                "rows": views.render("job_rows", ["jobs": page.jobs.map(ConsolePages.jobRow)]),
                "next": page.next?.token ?? "", "first_page": cursor != nil, "live": cursor == nil ? "job" : "",
            ])
    }

    private func jobRows(_ request: Request) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")
        let limit = min(max(Int(query["limit"] ?? "") ?? 50, 1), 100)
        let page = try await store.listJobs(try JobFilter(fields: query), after: try Self.cursor(query), limit: limit)
        return views.fragment("job_rows", ["jobs": page.jobs.map(ConsolePages.jobRow)])
    }

    private func find(_ request: Request) async throws -> Response {
        let text = FormFields(request.uri.query ?? "")["id"] ?? ""
        guard let id = UUID(uuidString: text) else {
            throw APIError(.badRequest, .invalidJobId, "'\(text)' is not a job id: paste the whole id (a UUID).")
        }
        guard try await store.job(id) != nil else { throw APIError(.notFound, .jobNotFound, "There is no job \(text.lowercased()).") }
        return redirect("/admin/jobs/\(id.uuidString.lowercased())")
    }

    static func cursor(_ query: FormFields) throws(APIError) -> JobCursor? {
        guard let text = query["after"] else { return nil }
        guard let cursor = JobCursor(token: text) else {
            throw APIError(.badRequest, .invalidCursor, "The page link is damaged; go back to the first page.")
        }
        return cursor
    }

    private func job(_ context: MomentsRequestContext) async throws -> JobRecord {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw APIError(.badRequest, .invalidJobId, "That is not a job id (a UUID).")
        }
        guard let job = try await store.job(id) else { throw APIError(.notFound, .jobNotFound, "There is no job \(text.lowercased()).") }
        return job
    }

    private func jobPage(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let job = try await job(context)
        async let events = store.events(job.id)
        async let webhooks = store.webhookDeliveries(job: job.id)
        async let pushes = store.pushDeliveries(job: job.id)
        async let audit = store.operations(job: job.id, limit: 50)
        let csrf = context.consoleSession?.csrf ?? ""
        let history = try await events
        let figures = await figures.value
        return views.page(
            "job", title: "Job \(job.id.uuidString.lowercased().prefix(8))", session: context.consoleSession, nav: "jobs",
            paused: figures.paused, notice: Self.notice(FormFields(request.uri.query ?? "")),
            [
                "job": ConsolePages.present(["id": job.id.uuidString.lowercased(), "callback_url": job.callbackURL]),
                "summary": views.render("job_summary", summaryContext(job)),
                "attempts": ConsolePages.attempts(history), "events": history.map(ConsolePages.event),
                "segments": (job.segments ?? []).map { segment in
                    [
                        "start": String(format: "%.2f", segment.start), "end": String(format: "%.2f", segment.end),
                        "length": String(format: "%.2f", segment.end - segment.start), "score": String(format: "%.2f", segment.score),
                    ]
                },
                "webhooks": try await webhooks.map { ConsolePages.webhook($0, csrf: csrf) },
                "pushes": try await pushes.map { push in
                    [
                        "id": push.id, "event": push.event, "environment": push.environment, "state": push.state, "attempts": push.attempts,
                        "last_status": push.lastStatus.map(String.init) ?? "", "reason": push.lastReason ?? "",
                    ] as [String: Any]
                },
                "audit": try await audit.map {
                    [
                        "at": ConsoleFormat.time($0.createdAt), "actor": $0.actor, "action": $0.action.rawValue,
                        "message": $0.message ?? "",
                    ]
                },
            ])
    }

    private func jobSummary(_ context: MomentsRequestContext) async throws -> Response {
        views.fragment("job_summary", summaryContext(try await job(context)))
    }

    private func summaryContext(_ job: JobRecord) -> [String: Any] {
        [
            "job": ConsolePages.present([
                "id": job.id.uuidString.lowercased(), "status": job.status.rawValue, "progress": job.progress,
                "stage": job.stage ?? "", "message": job.message ?? "", "error_code": job.errorCode,
                "error_message": job.errorMessage ?? "",
            ]),
            "can_retry": job.status == .failed, "can_cancel": !job.status.isTerminal, "can_delete": job.status.isTerminal,
            "fields": ConsolePages.fields(job, storage: storage, linkLifetime: linkLifetime, traceURL: traceURL(job.traceID)),
        ]
    }

    private func confirmJobAction(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let job = try await job(context)
        let id = job.id.uuidString.lowercased()
        let action = try Self.jobAction(FormFields(request.uri.query ?? "")["action"])
        let applies = action.applicableStatuses.contains(job.status)
        let (heading, text) =
            switch action {
            case .retry: ("Retry this job?", "Job \(id) failed (\(job.errorCode ?? "no code")). It goes back to the queue with 3 more attempts.")
            case .cancel: ("Cancel this job?", "Job \(id) is \(job.status.rawValue). A waiting job leaves the queue; a running one stops within 2 s.")
            default: ("Delete this job?", "Job \(id) and its history, webhook deliveries, upload and highlight are deleted for good.")
            }
        return views.page(
            "confirm", title: heading, session: context.consoleSession, nav: "jobs",
            [
                "heading": heading, "text": applies ? text : "Job \(id) is \(job.status.rawValue): it cannot be \(action.pastTense).",
                "action": "/admin/jobs/\(id)/\(action.rawValue)", "button": "\(action.rawValue.capitalized) job", "danger": action == .delete,
                "disabled": !applies, "back": "/admin/jobs/\(id)", "fields": [[String: Any]](),

            ])
    }

    private func jobAction(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let job = try await job(context)
        let action = try Self.jobAction(context.parameters.get("action"))
        let actor = try operatorFor(context)
        let id = job.id.uuidString.lowercased()
        switch action {
        case .retry:
            if case .notFailed(let status) = try await actor.retry(job.id) {
                throw APIError(.conflict, .notFailed, "Job \(id) is \(status.rawValue); only failed jobs are retried.")
            }
        case .cancel:
            if case .alreadyFinished(let status) = try await actor.cancel(job.id) {
                throw APIError(.conflict, .alreadyFinished, "Job \(id) already ended \(status.rawValue); there is nothing to cancel.")
            }
        default:
            if case .notFinished(let status) = try await actor.delete(job.id) {
                throw APIError(.conflict, .notFinished, "Job \(id) is \(status.rawValue); cancel it before deleting it.")
            }
            return redirect("/admin/jobs?notice=deleted")
        }
        return redirect("/admin/jobs/\(id)?notice=\(action.pastTense)")
    }

    static func jobAction(_ text: String?) throws(APIError) -> OperatorAction {
        guard let text, let action = OperatorAction(rawValue: text), [.retry, .cancel, .delete].contains(action) else {
            throw APIError(.badRequest, .invalidAction, "'\(text ?? "")' is not a job action: use retry, cancel or delete.")
        }
        return action
    }

    // MARK: Bulk actions

    private func confirmBulk(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")
        let action = try Self.jobAction(query["action"])
        let filter = try JobFilter(fields: query)
        let narrowed = filter.narrowed(to: action.applicableStatuses)
        var matched = 0
        if let narrowed { matched = try await store.countJobs(narrowed) }
        let verb = action.rawValue
        let text =
            matched == 0
            ? "No job matching \(filter.summary) can be \(action.pastTense)."
            : "This will \(verb) \(matched) job\(matched == 1 ? "" : "s"): \(narrowed?.summary ?? ""). Jobs created from now on are not touched. "
                + "It runs in batches of 100; its progress and your name go to the audit log."
        return views.page(
            "confirm", title: "Bulk \(verb)", session: context.consoleSession, nav: "jobs",
            [
                "heading": "\(verb.capitalized) every matching job?", "text": text, "action": "/admin/bulk",
                "button": "\(verb.capitalized) \(matched) job\(matched == 1 ? "" : "s")", "danger": action != .retry, "disabled": matched == 0,
                "back": "/admin/jobs?\(FormFields.encode(filter.fields))",
                "fields": ([("action", verb)] + filter.fields).map { ["name": $0.0, "value": $0.1] },

            ])
    }

    private func startBulk(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let form = try await Self.form(request, context: context)
        let action = try Self.jobAction(form["action"])
        let filter = try JobFilter(fields: form)
        guard let operation = try await operatorFor(context).startBulk(action, filter: filter, runner: nil) else {
            throw APIError(.unprocessableContent, .nothingToDo, "No job matching \(filter.summary) can be \(action.pastTense).")
        }
        context.logger.notice(
            "bulk action started",
            metadata: [
                "operation": "\(operation.id)", "action": "\(action.rawValue)",
                "operator": "\(operation.actor)", "matched": "\(operation.matched ?? 0)",
            ])
        return redirect("/admin/operations/\(operation.id)")
    }

    // MARK: The audit log

    private func operations(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")
        let before = query["before"].flatMap { Int64($0) }
        let list = try await store.operations(before: before, limit: 50)
        return views.page(
            "operations", title: "Audit log", session: context.consoleSession, nav: "operations",
            paused: await figures.value.paused, notice: Self.notice(query),
            [
                "operations": list.map(ConsolePages.operation),
                "older": list.count == 50 ? list.last.map { String($0.id) } ?? "" : "",
            ])
    }

    /// The audit log entry the path names. (Two guards, not one: Swift 6.3's optimizer crashed
    /// splitting this coroutine when the `try await` sat in a combined `guard let`.)
    private func loadOperation(_ context: MomentsRequestContext) async throws -> OperationRecord {
        let missing = APIError(.notFound, .operationNotFound, "There is no such entry in the audit log.")
        guard let number = context.parameters.get("number").flatMap({ Int64($0) }) else { throw missing }
        let found: OperationRecord? = try await store.operation(number)
        guard let found else { throw missing }
        return found
    }

    private func operationPage(_ context: MomentsRequestContext) async throws -> Response {
        let operation = try await loadOperation(context)
        let heading =
            operation.isBulk ? "Bulk \(operation.action.rawValue) #\(operation.id)" : "\(operation.action.rawValue.capitalized) #\(operation.id)"
        return views.page(
            "operation", title: heading, session: context.consoleSession, nav: "operations",
            [
                "heading": heading, "id": operation.id,
                "progress": views.render("operation_progress", progressContext(operation, csrf: context.consoleSession?.csrf ?? "")),
            ])
    }

    private func operationProgress(_ context: MomentsRequestContext) async throws -> Response {
        views.fragment("operation_progress", progressContext(try await loadOperation(context), csrf: context.consoleSession?.csrf ?? ""))
    }

    private func progressContext(_ operation: OperationRecord, csrf: String) -> [String: Any] {
        var context = ConsolePages.operation(operation)
        context["total"] = max(operation.matched ?? 1, operation.done + operation.skipped + operation.failed, 1)
        context["processed"] = operation.done + operation.skipped + operation.failed
        context["done"] = operation.done
        context["skipped"] = operation.skipped
        context["failed"] = operation.failed
        context["running"] = operation.state == .running
        context["csrf"] = csrf
        context["query"] = FormFields.encode((operation.filter ?? JobFilter()).fields)
        return context
    }

    private func stopOperation(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let operation = try await loadOperation(context)
        _ = try await store.stopBulk(operation.id, actor: context.consoleSession?.actor ?? "console")
        return redirect("/admin/operations/\(operation.id)")
    }

    // MARK: The queue, webhooks and workers

    private func queueAction(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let actor = try operatorFor(context)
        switch context.parameters.get("action") {
        case "pause": try await actor.pause()
        case "resume": try await actor.resume()
        default: throw APIError(.notFound, .notFound, "The queue can be paused or resumed.")
        }
        await figures.invalidate()
        return redirect("/admin?notice=\(context.parameters.get("action") == "pause" ? "paused" : "resumed")")
    }

    private func redeliver(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let missing = APIError(.notFound, .webhookNotFound, "There is no such webhook delivery.")
        guard let number = context.parameters.get("number").flatMap({ Int64($0) }) else { throw missing }
        let redelivered: WebhookDeliveryRecord? = try await operatorFor(context).redeliver(number)
        guard let delivery = redelivered else { throw missing }
        return redirect("/admin/jobs/\(delivery.jobID.uuidString.lowercased())?notice=redelivered")
    }

    private func workers(_ context: MomentsRequestContext) async throws -> Response {
        views.page(
            "workers", title: "Workers", session: context.consoleSession, nav: "workers", paused: await figures.value.paused,
            ["rows": views.render("worker_rows", ["workers": try await store.workers().map { ConsolePages.worker($0) }])])
    }

    /// The music library, as the app's picker lists it.
    private func music(_ context: MomentsRequestContext) async throws -> Response {
        let tracks = try await store.tracks().map { track -> [String: Any] in
            [
                "id": track.id.uuidString.lowercased(), "title": track.title, "artist": track.artist ?? "",
                "duration": String(format: "%d:%02d", Int(track.duration) / 60, Int(track.duration) % 60),
                "tempo": track.tempo.map { String(format: "%.0f a minute", $0) } ?? "no steady beat",
                "license": track.license ?? "", "added": MomentsJSON.format(track.createdAt),
            ]
        }
        return views.page(
            "music", title: "Music", session: context.consoleSession, nav: "music", paused: await figures.value.paused,
            ["tracks": tracks])
    }

    /// The operator's webhook endpoints; `secret` shows one endpoint's secret, right after it was
    /// made or rotated.
    private func webhookEndpoints(
        _ context: MomentsRequestContext, notice: String? = nil, secret: WebhookEndpoint? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let csrf = context.consoleSession?.csrf ?? ""
        let endpoints = try await store.webhookEndpoints(includingRemoved: true).map { endpoint -> [String: Any] in
            [
                "id": endpoint.id.uuidString.lowercased(), "url": endpoint.url, "description": endpoint.description ?? "",
                "masked": endpoint.maskedSecret, "added": MomentsJSON.format(endpoint.createdAt),
                "rotated": endpoint.rotatedAt.map { MomentsJSON.format($0) } ?? "",
                "state": endpoint.removedAt != nil
                    ? "removed"
                    : endpoint.signingSecrets().count > 1
                        ? "active; the old secret signs too until \(endpoint.previousSecretUntil.map { MomentsJSON.format($0) } ?? "")" : "active",
                "active": endpoint.removedAt == nil, "csrf": csrf,
            ]
        }
        var values: [String: Any] = ["endpoints": endpoints, "csrf": csrf]
        if let secret { values["secret"] = secret.secret; values["secret_url"] = secret.url }
        return views.page(
            "webhooks", title: "Webhooks", session: context.consoleSession, nav: "webhooks", paused: await figures.value.paused,
            notice: notice, status: status, values)
    }

    private func addEndpoint(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let form = try await Self.form(request, context: context)
        let url = (form["url"] ?? "").trimmingCharacters(in: .whitespaces)
        let description = form["description"].flatMap { $0.isEmpty ? nil : String($0.prefix(200)) }
        guard DestinationPolicy.isWellFormed(url) else {
            return try await webhookEndpoints(
                context, notice: "An endpoint is \(DestinationPolicy.wellFormedRule) (invalid_callback_url).", status: .unprocessableContent)
        }
        do {
            _ = try await callbacks.check(url)
        } catch {
            return try await webhookEndpoints(context, notice: "The endpoint \(error.reason) (invalid_callback_url).", status: .unprocessableContent)
        }
        let endpoint = try await store.addWebhookEndpoint(url: url, description: description)
        context.logger.notice(
            "webhook endpoint added", metadata: ["endpoint": "\(endpoint.id)", "operator": "\(context.consoleSession?.name ?? "")"])
        return try await webhookEndpoints(context, notice: "The endpoint is added: every job's end is sent there from now on.", secret: endpoint)
    }

    private func endpointAction(_ request: Request, context: MomentsRequestContext) async throws -> Response {
        let missing = APIError(.notFound, .webhookNotFound, "There is no such webhook endpoint, or it was removed.")
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw missing }
        switch context.parameters.get("action") {
        case "remove":
            guard try await store.removeWebhookEndpoint(id) else { throw missing }
            return redirect("/admin/webhooks?notice=endpoint_removed")
        case "rotate":
            let hours = Int(try await Self.form(request, context: context)["overlap_hours"] ?? "24").map { min(max($0, 0), 168) } ?? 24
            guard let rotated = try await store.rotateWebhookEndpoint(id, overlap: .seconds(hours * 3600)) else { throw missing }
            return try await webhookEndpoints(
                context, notice: "The secret is new; the old one signs too for \(hours) hours.", secret: rotated)
        case "ping":
            guard let delivery = try await store.pingWebhookEndpoint(id) else { throw missing }
            // A worker sends it within a second or two: wait a little for its answer.
            let notice =
                switch try await store.webhookAnswer(of: delivery, within: .seconds(10)) {
                case let state? where state.delivered: "Ping \(delivery) delivered: \(state.outcome)."
                case let state?: "Ping \(delivery) not taken: \(state.outcome)."
                case nil: "Ping \(delivery) is queued; no worker has sent it yet."
                }
            return try await webhookEndpoints(context, notice: notice)
        default:
            throw APIError(.notFound, .notFound, "An endpoint can be pinged, rotated or removed.")
        }
    }

    private func workerRows() async throws -> Response {
        views.fragment("worker_rows", ["workers": try await store.workers().map { ConsolePages.worker($0) }])
    }

    // MARK: Plumbing

    private func operatorFor(_ context: MomentsRequestContext) throws -> Operator {
        guard let session = context.consoleSession else {
            throw APIError(.unauthorized, .consoleSignInRequired, "Sign in to the console first.")
        }
        return Operator(jobs: jobs, storage: storage, actor: session.actor)
    }

    private func redirect(_ location: String) -> Response {
        var headers = ConsoleViews.securityHeaders
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    /// The fields of a form post (16 KiB at most).
    static func form(_ request: Request, context: MomentsRequestContext) async throws -> FormFields {
        var request = request
        return try await form(&request, context: context)
    }

    /// The fields of a form post, leaving the collected body in `request` for whoever reads it next.
    static func form(_ request: inout Request, context: MomentsRequestContext) async throws -> FormFields {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false else {
            throw APIError(.unsupportedMediaType, .unsupportedMediaType, "Console forms are sent as application/x-www-form-urlencoded.")
        }
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: 16 << 10)
        } catch {
            throw APIError(.contentTooLarge, .formTooLarge, "A console form is at most 16 KiB.")
        }
        return FormFields(String(buffer: body))
    }

    /// What a `notice=` after an action says (a fixed sentence per action, never text from the URL).
    static func notice(_ query: FormFields) -> String? {
        switch query["notice"] {
        case "retried": "The job is back in the queue."
        case "cancelled": "The job is cancelled."
        case "deleted": "The job is deleted."
        case "paused": "The queue is paused: workers finish what they run and take nothing new."
        case "resumed": "The queue is running again."
        case "redelivered": "The webhook is due again; a worker sends it within seconds."
        case "endpoint_removed": "The endpoint is removed: nothing more is sent there."
        default: nil
        }
    }
}

/// Guards the console: security headers on every answer, errors as an HTML page, the session
/// checked for everything but the sign-in page and static files, and the CSRF token (and, when
/// the browser sends one, the Origin) checked on every POST but the sign-in itself.
struct ConsoleMiddleware: RouterMiddleware {
    typealias Context = MomentsRequestContext
    let keys: ConsoleKeys
    let views: ConsoleViews

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let path = request.uri.path
        context.consoleSession = request.cookies[ConsoleKeys.cookieName].flatMap { keys.session(cookie: $0.value) }
        do {
            let open = path.hasPrefix("/admin/static/") || path == "/admin/login"
            if !open, context.consoleSession == nil {
                if request.method == .get, path != "/admin/live" {
                    let next = path + (request.uri.query.map { "?" + $0 } ?? "")
                    var headers = ConsoleViews.securityHeaders
                    headers[.location] = "/admin/login?" + FormFields.encode([("next", next)])
                    return Response(status: .seeOther, headers: headers)
                }
                throw APIError(.unauthorized, .consoleSignInRequired, "Sign in to the console first (your session may have expired).")
            }
            var request = request
            if request.method == .post, path != "/admin/login" {
                try checkOrigin(request)
                try await checkCSRF(&request, context: context)
            }
            return try await next(request, context)
        } catch let error as APIError {
            return errorPage(error.status, code: error.code.rawValue, message: error.message, session: context.consoleSession)
        } catch let error as any CodedError {
            let mapped = ErrorMiddleware<Context>.map(error)
            return errorPage(mapped.status, code: mapped.code.rawValue, message: mapped.message, session: context.consoleSession)
        } catch let error as any HTTPResponseError {
            return errorPage(
                error.status, code: (error.status == .notFound ? APIErrorCode.notFound : .http(error.status)).rawValue,
                message: error.status == .notFound ? "There is no console page at \(path)." : "\(error.status.reasonPhrase).",
                session: context.consoleSession)
        }
    }

    /// A browser names the page a form came from; a form posted from another site is refused.
    private func checkOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin], origin != "null" else { return }
        let host = request.head.authority ?? ""
        guard let url = URL(string: origin), let originHost = url.host else {
            throw APIError(.forbidden, .crossOriginRequest, "This form was posted from another site.")
        }
        let originAuthority = originHost + (url.port.map { ":\($0)" } ?? "")
        guard originAuthority == host || originHost == host else {
            throw APIError(.forbidden, .crossOriginRequest, "This form was posted from another site (\(origin)); post it from the console.")
        }
    }

    /// Reads the form (keeping it in the request for the handler) and checks its `csrf` field.
    private func checkCSRF(_ request: inout Request, context: Context) async throws {
        guard let session = context.consoleSession else { return }
        let form = try await ConsoleController.form(&request, context: context)
        guard let sent = form["csrf"], MetricsController.equalInConstantTime(sent, session.csrf) else {
            throw APIError(
                .forbidden, .csrfTokenInvalid,
                "This form lacks the console's CSRF token, or carries another session's. Reload the page and try again.")
        }
    }

    private func errorPage(_ status: HTTPResponse.Status, code: String, message: String, session: ConsoleSession?) -> Response {
        views.page(
            "error", title: "\(status.code) \(status.reasonPhrase)", session: session, status: status,
            ["status": status.code, "reason": status.reasonPhrase, "code": code, "message": message])
    }
}
