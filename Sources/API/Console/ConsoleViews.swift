import Foundation
import HTTPTypes
import Hummingbird
import MomentsModel
import Mustache

/// The console's Mustache templates and static files, compiled into the binary (no files to
/// ship, nothing to read at run time). Every `{{value}}` is HTML-escaped by Mustache; only the
/// fragments and SVG the console renders itself go in unescaped (`{{{…}}}`).
struct ConsoleViews: Sendable {
    let library: MustacheLibrary

    static let templates: [String: [UInt8]] = [
        "head": PackageResources.head_mustache, "foot": PackageResources.foot_mustache, "login": PackageResources.login_mustache,
        "error": PackageResources.error_mustache, "overview": PackageResources.overview_mustache,
        "charts": PackageResources.charts_mustache, "jobs": PackageResources.jobs_mustache, "job_rows": PackageResources.job_rows_mustache,
        "job": PackageResources.job_mustache, "job_summary": PackageResources.job_summary_mustache,
        "confirm": PackageResources.confirm_mustache, "operations": PackageResources.operations_mustache,
        "operation": PackageResources.operation_mustache, "operation_progress": PackageResources.operation_progress_mustache,
        "workers": PackageResources.workers_mustache, "worker_rows": PackageResources.worker_rows_mustache,
        "music": PackageResources.music_mustache, "webhooks": PackageResources.webhooks_mustache,
    ]

    static let assets: [String: (type: String, bytes: [UInt8])] = [
        "console.css": ("text/css; charset=utf-8", PackageResources.console_css),
        "console.js": ("text/javascript; charset=utf-8", PackageResources.console_js),
    ]

    /// Parses every template; a template that does not parse is a build defect, found by the
    /// first test that starts the console.
    init() {
        var library = MustacheLibrary()
        for (name, bytes) in Self.templates {
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                preconditionFailure("console template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// Every console response carries these: nothing inline may run, nothing may frame it, and
    /// nothing is cached.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "same-origin",
        .cacheControl: "no-store",
    ]

    func render(_ template: String, _ context: [String: Any]) -> String {
        library.render(context, withTemplate: template) ?? ""
    }

    /// A whole page: the template with the header's context (who is signed in, the queue's state).
    func page(
        _ template: String, title: String, session: ConsoleSession?, nav: String? = nil, paused: Bool = false,
        notice: String? = nil, status: HTTPResponse.Status = .ok, _ context: [String: Any] = [:]
    ) -> Response {
        var context = context
        context["title"] = title
        context["version"] = MomentsVersion.current
        if let notice { context["notice"] = notice }
        if let session {
            var header: [String: Any] = [
                "name": session.name, "csrf": session.csrf,
                "queue_state": paused ? "Queue paused" : "Queue running",
            ]
            if let nav { header["nav_\(nav)"] = true }
            context["session"] = header
        }
        return html(render(template, context), status: status)
    }

    /// A fragment a page reloads (rows, a summary, charts).
    func fragment(_ template: String, _ context: [String: Any]) -> Response {
        html(render(template, context))
    }

    func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// How the console writes times and spans.
enum ConsoleFormat {
    static func time(_ date: Date?) -> String {
        guard let date else { return "" }
        // 2026-11-23T10:04:05Z → 2026-11-23 10:04:05
        return String(date.formatted(.iso8601).replacingOccurrences(of: "T", with: " ").dropLast())
    }

    static func iso(_ date: Date) -> String { date.formatted(.iso8601) }

    /// `datetime-local` input values are UTC here: `2026-11-23T10:04`.
    static func inputValue(_ date: Date?) -> String {
        guard let date else { return "" }
        return String(time(date).prefix(16)).replacingOccurrences(of: " ", with: "T")
    }

    static func span(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "" }
        if seconds < 10 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        if whole < 86_400 { return "\(whole / 3600) h \(whole % 3600 / 60) min" }
        return "\(whole / 86_400) d \(whole % 86_400 / 3600) h"
    }

    static func bytes(_ count: Int64?) -> String {
        guard let count else { return "" }
        return ByteCountFormatter.string(fromByteCount: count, countStyle: .binary)
    }
}
