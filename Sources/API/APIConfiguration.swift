import CurlHTTP
import Foundation
import Hummingbird
import JobStore
import MomentsModel
import MomentsSupport
import NIOCore

/// The API's own settings, from the environment: `PORT` (8000, as Railway and Render set it),
/// `HOST` (0.0.0.0), `MAX_UPLOAD_BYTES` (2 GiB), `PUBLIC_URL` (the base of absolute URLs given to
/// clients; by default taken from each request's Host header), `UPLOAD_DIR` (temporary files),
/// `AUTH_REQUIRED` (true), `FREE_MONTHLY_HIGHLIGHTS` (3), the upload rate limits
/// `RATE_LIMIT_UPLOADS_PER_OWNER` (10) and `RATE_LIMIT_UPLOADS_PER_IP` (30) per
/// `RATE_LIMIT_WINDOW_SECONDS` (60), and `TRUSTED_PROXY_HOPS` (0; 1 behind Railway's, Render's or an
/// ingress's proxy, which appends the client's address to `X-Forwarded-For`); `WEBHOOK_SECRET` (set:
/// `callback_url` is accepted).
public struct APIConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var maxUploadBytes: Int64
    public var publicURL: String?
    public var uploadDirectory: URL
    /// How long a presigned download URL stays valid.
    public var downloadLinkLifetime: Duration
    /// How long a playback link (`playback_url`, API 1.2) works without the token
    /// (`PLAYBACK_URL_SECONDS`, an hour; at most 7 days, S3's limit).
    public var playbackLinkLifetime: Duration = .seconds(3600)
    /// The secret playback links on local storage are signed under (`URL_SIGNING_SECRET`); nil: a
    /// key made at start, so the links die with the process.
    public var urlSigningSecret: String?
    /// Whether devices may register for pushes: APNs is configured (`APNS_KEY_ID`, on the workers
    /// too, which send them).
    public var pushEnabled = false
    /// How long the PUT URL of a direct upload stays valid (`DIRECT_UPLOAD_URL_SECONDS`): an
    /// upload must begin within it, and the URL is useless once the job starts.
    /// The smallest part of a resumable upload (`UPLOAD_PART_MIB`, 5–512 MiB; S3's floor is 5).
    public var uploadPartBytes: Int64 = 8 << 20
    public var uploadLinkLifetime: Duration
    /// Without it, requests without a token are served as the anonymous owner.
    public var authRequired: Bool
    /// Highlights per calendar month on the free plan.
    public var freeMonthlyHighlights: Int
    public var rateLimit: RateLimits
    /// Proxies in front of the API whose `X-Forwarded-For` entries are trusted.
    public var trustedProxyHops: Int
    /// Whether `callback_url` is accepted: the workers sign webhooks with `WEBHOOK_SECRET`, so without
    /// it none would be sent.
    public var webhooksEnabled: Bool
    /// Where a `callback_url` may point (`WEBHOOK_ALLOW_PRIVATE`, `WEBHOOK_ALLOWED_PORTS`); the
    /// workers check it again at each delivery.
    public var callbacks: DestinationPolicy
    /// What a scrape of `/metrics` must send as its bearer token (`METRICS_TOKEN`); nil: no token.
    public var metricsToken: String?
    /// The operator console at `/admin`; nil (no `ADMIN_TOKEN`): off, and `/admin` answers 404.
    public var console: Console?
    /// Whether a request's W3C `traceparent` is continued (`TRACE_CONTINUE_INCOMING`, false): only
    /// where every caller is trusted (a gateway that starts the traces). Otherwise any client could
    /// put its jobs into traces of its choosing, or mark them unsampled and untraced.
    public var continueIncomingTraces = false
    /// Whether requests are traced (a span each): `moments api` turns it off when no OTLP exporter
    /// is configured, so a node without tracing spends nothing on spans nobody exports.
    public var tracing = true
    /// Whether the status poll is answered in the channel pipeline, before the router
    /// (`STATUS_FAST_PATH`, true): the same answers and metrics at a fraction of the cost, but no
    /// span; false sends every poll through the router (to trace each one).
    public var statusFastPath = true

    /// The console's settings: `ADMIN_TOKEN` (at least 24 characters; what an operator types to
    /// sign in), `ADMIN_SESSION_HOURS` (12: how long a sign-in lasts) and `TRACE_URL_TEMPLATE`
    /// (optional: where a job's trace id links to, e.g.
    /// `https://grafana.example.com/explore?left={"queries":[{"query":"{trace_id}"}]}`).
    public struct Console: Sendable {
        public var adminToken: String
        public var sessionLifetime: Duration
        /// An http(s) URL with `{trace_id}` where the trace id goes.
        public var traceURLTemplate: String?

        public init(adminToken: String, sessionLifetime: Duration = .seconds(12 * 3600), traceURLTemplate: String? = nil) {
            self.adminToken = adminToken
            self.sessionLifetime = sessionLifetime
            self.traceURLTemplate = traceURLTemplate
        }

        /// The link for `traceID`, when there is a template.
        func traceURL(_ traceID: String?) -> String? {
            guard let traceID, let traceURLTemplate else { return nil }
            return traceURLTemplate.replacingOccurrences(of: "{trace_id}", with: traceID)
        }

        static func from(_ environment: Settings) throws(SettingError) -> Console? {
            guard let token = environment["ADMIN_TOKEN"], !token.isEmpty else { return nil }
            guard token.count >= 24, token.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline }) else {
                throw SettingError("ADMIN_TOKEN must be at least 24 printable characters without spaces (e.g. openssl rand -hex 24).")
            }
            let hours = try Setting.integer("ADMIN_SESSION_HOURS", in: environment, default: 12, range: 1...168)
            let template = environment["TRACE_URL_TEMPLATE"].flatMap { $0.isEmpty ? nil : $0 }
            if let template {
                guard template.hasPrefix("https://") || template.hasPrefix("http://"), template.contains("{trace_id}") else {
                    throw SettingError(
                        "TRACE_URL_TEMPLATE must be an http:// or https:// URL with {trace_id} where the trace id goes, not '\(template)'.")
                }
            }
            return Console(adminToken: token, sessionLifetime: .seconds(hours * 3600), traceURLTemplate: template)
        }
    }

    public struct RateLimits: Sendable {
        /// Uploads (and upload reservations) per window and device; 0 turns the limit off.
        public var uploadsPerOwner: Int
        /// Uploads, reservations and device registrations per window and client address; 0 turns it off.
        public var uploadsPerIP: Int
        public var window: Duration
        /// Device registrations per day and client address (IPv6: per /64); 0 turns it off. Each
        /// new device starts a fresh free quota, so this bounds how often one network resets it.
        public var registrationsPerDay: Int

        public init(uploadsPerOwner: Int = 10, uploadsPerIP: Int = 30, window: Duration = .seconds(60), registrationsPerDay: Int = 10) {
            self.uploadsPerOwner = uploadsPerOwner
            self.uploadsPerIP = uploadsPerIP
            self.window = window
            self.registrationsPerDay = registrationsPerDay
        }
    }

    public init(
        host: String = "0.0.0.0", port: Int = 8000, maxUploadBytes: Int64 = 2 << 30, publicURL: String? = nil,
        uploadDirectory: URL = FileManager.default.temporaryDirectory, downloadLinkLifetime: Duration = .seconds(900),
        uploadLinkLifetime: Duration = .seconds(900), authRequired: Bool = true, freeMonthlyHighlights: Int = 3, rateLimit: RateLimits = RateLimits(),
        trustedProxyHops: Int = 0, webhooksEnabled: Bool = false, callbacks: DestinationPolicy = DestinationPolicy(),
        metricsToken: String? = nil, console: Console? = nil
    ) {
        self.host = host
        self.port = port
        self.maxUploadBytes = maxUploadBytes
        self.publicURL = publicURL
        self.uploadDirectory = uploadDirectory
        self.downloadLinkLifetime = downloadLinkLifetime
        self.uploadLinkLifetime = uploadLinkLifetime
        self.authRequired = authRequired
        self.freeMonthlyHighlights = freeMonthlyHighlights
        self.rateLimit = rateLimit
        self.trustedProxyHops = trustedProxyHops
        self.webhooksEnabled = webhooksEnabled
        self.callbacks = callbacks
        self.metricsToken = metricsToken
        self.console = console
    }

    public init(environment: Settings) throws(SettingError) {
        let port = try Setting.integer("PORT", in: environment, default: 8000, range: 1...65535)
        let maxUpload = try Setting.integer("MAX_UPLOAD_BYTES", in: environment, default: 2 << 30, range: 1024...(1 << 40))
        var publicURL = environment["PUBLIC_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if let url = publicURL {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw SettingError("PUBLIC_URL must be an http:// or https:// URL, not '\(url)'.")
            }
            publicURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        let uploadDirectory = URL(
            fileURLWithPath: environment["UPLOAD_DIR"].flatMap { $0.isEmpty ? nil : $0 }
                ?? FileManager.default.temporaryDirectory.path)
        guard FileManager.default.isWritableFile(atPath: uploadDirectory.path) else {
            throw SettingError("UPLOAD_DIR (\(uploadDirectory.path)) is not a folder the API can write to.")
        }
        let rateLimit = RateLimits(
            uploadsPerOwner: try Setting.integer("RATE_LIMIT_UPLOADS_PER_OWNER", in: environment, default: 10, range: 0...100_000),
            uploadsPerIP: try Setting.integer("RATE_LIMIT_UPLOADS_PER_IP", in: environment, default: 30, range: 0...100_000),
            window: .seconds(try Setting.integer("RATE_LIMIT_WINDOW_SECONDS", in: environment, default: 60, range: 1...86_400)),
            registrationsPerDay: try Setting.integer("REGISTRATIONS_PER_IP_PER_DAY", in: environment, default: 10, range: 0...1_000_000))
        self.init(
            host: environment["HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "0.0.0.0", port: port,
            maxUploadBytes: Int64(maxUpload), publicURL: publicURL, uploadDirectory: uploadDirectory,
            uploadLinkLifetime: .seconds(try Setting.integer("DIRECT_UPLOAD_URL_SECONDS", in: environment, default: 900, range: 60...3600)),
            authRequired: try Setting.boolean("AUTH_REQUIRED", in: environment, default: true),
            freeMonthlyHighlights: try Setting.integer("FREE_MONTHLY_HIGHLIGHTS", in: environment, default: 3, range: 0...1_000_000),
            rateLimit: rateLimit,
            trustedProxyHops: try Setting.integer("TRUSTED_PROXY_HOPS", in: environment, default: 0, range: 0...10),
            webhooksEnabled: !(environment["WEBHOOK_SECRET"] ?? "").isEmpty,
            callbacks: try DestinationPolicy(environment: environment),
            metricsToken: try Self.metricsToken(environment), console: try Console.from(environment))
        continueIncomingTraces = try Setting.boolean("TRACE_CONTINUE_INCOMING", in: environment, default: false)
        statusFastPath = try Setting.boolean("STATUS_FAST_PATH", in: environment, default: true)
        uploadPartBytes = Int64(try Setting.integer("UPLOAD_PART_MIB", in: environment, default: 8, range: 5...512)) << 20
        pushEnabled = !(environment["APNS_KEY_ID"] ?? "").isEmpty
        playbackLinkLifetime = .seconds(try Setting.integer("PLAYBACK_URL_SECONDS", in: environment, default: 3600, range: 60...604_800))
        if let secret = environment["URL_SIGNING_SECRET"], !secret.isEmpty {
            guard secret.count >= 32 else {
                throw SettingError("URL_SIGNING_SECRET must be at least 32 characters (e.g. openssl rand -hex 32).")
            }
            urlSigningSecret = secret
        }
    }

    static func metricsToken(_ environment: Settings) throws(SettingError) -> String? {
        guard let token = environment["METRICS_TOKEN"], !token.isEmpty else { return nil }
        guard token.count >= 16, token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw SettingError("METRICS_TOKEN must be at least 16 printable characters without spaces (e.g. openssl rand -hex 24).")
        }
        return token
    }
}
