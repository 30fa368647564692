import Crypto
import CurlHTTP
import Foundation
import JobStore
import Jobs
import Logging
import MomentsContract
import MomentsModel
import MomentsSupport
import Storage
import Tracing

/// How webhooks are sent: `WEBHOOK_SECRET` signs them (without it none are sent and uploads with a
/// `callback_url` are refused), `WEBHOOK_MAX_ATTEMPTS` (8) with backoff from `WEBHOOK_RETRY_BASE_SECONDS`
/// (10) doubling up to an hour, `WEBHOOK_TIMEOUT_SECONDS` (10) per attempt; `PUBLIC_URL` makes the
/// `result_url` in the body absolute; `WEBHOOK_ALLOW_PRIVATE` and `WEBHOOK_ALLOWED_PORTS` say where
/// a callback may point (`DestinationPolicy`: public addresses, ports 80 and 443).
public struct WebhookConfiguration: Sendable {
    public var secret: String?
    public var maxAttempts: Int
    public var retryBase: Duration
    public var retryCap: Duration
    public var timeoutSeconds: Int
    public var pollInterval: Duration
    public var publicURL: String?
    public var destinations: DestinationPolicy

    public init(
        secret: String?, maxAttempts: Int = 8, retryBase: Duration = .seconds(10), retryCap: Duration = .seconds(3600),
        timeoutSeconds: Int = 10, pollInterval: Duration = .seconds(1), publicURL: String? = nil,
        destinations: DestinationPolicy = DestinationPolicy()
    ) {
        self.secret = secret
        self.maxAttempts = maxAttempts
        self.retryBase = retryBase
        self.retryCap = retryCap
        self.timeoutSeconds = timeoutSeconds
        self.pollInterval = pollInterval
        self.publicURL = publicURL
        self.destinations = destinations
    }

    public init(environment: Settings) throws(SettingError) {
        let secret = environment["WEBHOOK_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        if let secret, secret.utf8.count < 16 {
            throw SettingError("WEBHOOK_SECRET must be at least 16 characters long (32 random bytes, hex, is a good choice).")
        }
        let publicURL = environment["PUBLIC_URL"].flatMap { $0.isEmpty ? nil : ($0.hasSuffix("/") ? String($0.dropLast()) : $0) }
        self.init(
            secret: secret,
            maxAttempts: try Setting.integer("WEBHOOK_MAX_ATTEMPTS", in: environment, default: 8, range: 1...50),
            retryBase: .seconds(try Setting.integer("WEBHOOK_RETRY_BASE_SECONDS", in: environment, default: 10, range: 1...3600)),
            timeoutSeconds: try Setting.integer("WEBHOOK_TIMEOUT_SECONDS", in: environment, default: 10, range: 1...60),
            publicURL: publicURL, destinations: try DestinationPolicy(environment: environment))
    }

    /// base·2^(attempt−1), capped, times a random factor in [0.5, 1).
    func delay(afterAttempt attempt: Int) -> Duration {
        Backoff.delay(afterAttempt: attempt, first: retryBase, cap: retryCap)
    }
}

/// Sends the webhooks of jobs that ended, to their `callback_url` and to the operator's endpoints
/// (`webhook_endpoints`), and endpoint pings. Runs in every worker process; `webhook_deliveries`
/// rows are taken with `SKIP LOCKED`, so each attempt is made by one process.
///
/// Each POST carries the job as `/status` and `/jobs/{id}` show it, and these headers:
/// - `Moments-Event`: `job.completed`, `job.failed` or `job.cancelled` (or `ping`)
/// - `Moments-Delivery`: the delivery's id, the same on every retry (receivers drop repeats by it)
/// - `Moments-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with
///   `WEBHOOK_SECRET` for a callback and with the endpoint's secret for an endpoint; after a
///   rotation, a second `v1` with the secret before, until the overlap ends
/// - `traceparent` (and `tracestate`), when tracing is on: the delivery's span in the job's trace
///
/// A 2xx reply is delivered; 410 Gone stops at once; anything else (or no reply) is retried with
/// backoff until `maxAttempts`, then given up. Every attempt is recorded on the row.
public struct WebhookDispatcher: Sendable {
    let store: JobStore
    let configuration: WebhookConfiguration
    let logger: Logger

    public init(store: JobStore, configuration: WebhookConfiguration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends due webhooks until the task is cancelled.
    public func run() async {
        if configuration.secret == nil { logger.info("no WEBHOOK_SECRET: only the operator's webhook endpoints get webhooks") }
        // The lease outlasts one attempt, so a process that dies mid-request leaves the row to be retried.
        let lease = Duration.seconds(configuration.timeoutSeconds * 3 + 30)
        await OutboxSender.run(
            "webhooks", every: configuration.pollInterval, logger: logger,
            take: { try await store.takeDueWebhooks(limit: 16, lease: lease) }, send: { await self.deliver($0) })
    }

    func deliver(_ delivery: WebhookDelivery) async {
        var logger = self.logger
        if let job = delivery.jobID { logger[metadataKey: "job_id"] = "\(job.uuidString.lowercased())" }
        logger[metadataKey: "delivery"] = "\(delivery.id)"
        let outcome: WebhookAttemptOutcome
        do {
            let secrets: [String]
            if let id = delivery.endpointID {
                let endpoint = try await store.webhookEndpoint(id)
                guard let endpoint, endpoint.removedAt == nil else {
                    try await store.recordWebhookAttempt(delivery, .failed(status: nil, error: "the endpoint was removed", retryAt: nil))
                    return
                }
                secrets = endpoint.signingSecrets()
            } else if let secret = configuration.secret {
                secrets = [secret]
            } else {
                try await store.recordWebhookAttempt(
                    delivery, .failed(status: nil, error: "WEBHOOK_SECRET is not set on the worker, so callbacks cannot be signed", retryAt: nil))
                return
            }
            guard let jobID = delivery.jobID else {
                outcome = await attempt(delivery, body: { try Self.pingBody(delivery) }, secrets: secrets)
                record(outcome, of: delivery, logger: logger)
                try await store.recordWebhookAttempt(delivery, outcome)
                return
            }
            guard let job = try await store.job(jobID) else {
                try await store.recordWebhookAttempt(delivery, .failed(status: nil, error: "the job no longer exists", retryAt: nil))
                return
            }
            // A client span in the job's trace; the POST carries its traceparent.
            let span = startSpan("webhook \(delivery.event)", context: JobTrace.context(of: job), ofKind: .client)
            defer { span.end() }
            span.updateAttributes { attributes in
                JobTrace.describe(job, in: &attributes)
                attributes["http.request.method"] = "POST"
                attributes["server.address"] = URLComponents(string: delivery.url)?.host
                attributes["moments.webhook.delivery"] = Int(delivery.id)
                attributes["moments.webhook.attempt"] = delivery.attempt
            }
            outcome = await ServiceContext.$current.withValue(span.context) {
                let publicURL = configuration.publicURL
                let outcome = await attempt(delivery, body: { try Self.body(delivery, job: job, publicURL: publicURL) }, secrets: secrets)
                record(outcome, of: delivery, logger: logger)
                return outcome
            }
            switch outcome {
            case .delivered(let status): span.attributes["http.response.status_code"] = status
            case .failed(let status, let error, _):
                span.attributes["http.response.status_code"] = status
                span.setStatus(SpanStatus(code: .error, message: error))
            }
        } catch {
            logger.warning("webhook attempt not made", metadata: ["error": "\(error)"])
            return  // the row's lease lapses and it is tried again
        }
        do { try await store.recordWebhookAttempt(delivery, outcome) } catch {
            logger.warning("webhook attempt not recorded", metadata: ["error": "\(error)"])
        }
    }

    private func record(_ outcome: WebhookAttemptOutcome, of delivery: WebhookDelivery, logger: Logger) {
        switch outcome {
        case .delivered(let status): logger.info("webhook delivered", metadata: ["status": "\(status)", "attempt": "\(delivery.attempt)"])
        case .failed(let status, let error, let retryAt):
            logger.warning(
                retryAt == nil ? "webhook given up" : "webhook failed; will retry",
                metadata: ["status": "\(status.map(String.init) ?? "none")", "error": "\(error)", "attempt": "\(delivery.attempt)"])
        }
    }

    private func attempt(
        _ delivery: WebhookDelivery, body makeBody: () throws -> Data, secrets: [String]
    ) async -> WebhookAttemptOutcome {
        let body: Data
        do { body = try makeBody() } catch {
            return .failed(status: nil, error: "the body could not be encoded", retryAt: nil)
        }
        let retryAt =
            delivery.attempt < configuration.maxAttempts
            ? Date().addingTimeInterval(configuration.delay(afterAttempt: delivery.attempt).inSeconds) : nil
        // Checked again now (DNS may have changed since the upload), and sent to the address checked.
        let destination: CheckedDestination
        do {
            destination = try await configuration.destinations.check(delivery.url)
        } catch {
            return .failed(status: nil, error: "refused: the callback URL \(error.reason)", retryAt: error.transient ? retryAt : nil)
        }
        let timestamp = Int(Date().timeIntervalSince1970)
        var headers: [(String, String)] = [
            ("Content-Type", "application/json"), ("User-Agent", "Moments-Webhooks/1"),
            ("Moments-Event", delivery.event), ("Moments-Delivery", String(delivery.id)),
            ("Moments-Signature", Self.signature(body, timestamp: timestamp, secrets: secrets)),
        ]
        for (name, value) in (JobTrace.headers() ?? [:]).sorted(by: { $0.key < $1.key }) { headers.append((name, value)) }
        var request = CurlRequest(
            method: "POST", url: delivery.url,
            headers: headers,
            body: .bytes(Array(body)), stallTimeout: configuration.timeoutSeconds, connectTimeout: min(5, configuration.timeoutSeconds),
            totalTimeout: configuration.timeoutSeconds)
        request.destination = destination
        switch await Curl.perform(request) {
        case .success(let response) where (200..<300).contains(response.status):
            return .delivered(status: response.status)
        case .success(let response) where response.status == 410:
            return .failed(status: 410, error: "the receiver answered 410 Gone", retryAt: nil)
        case .success(let response):
            return .failed(status: response.status, error: "the receiver answered HTTP \(response.status)", retryAt: retryAt)
        case .failure(let failure):
            return .failed(status: nil, error: failure.message, retryAt: retryAt)
        }
    }

    /// `{"event": …, "delivery_id": …, "job": {the job as GET /api/v1/jobs/{id} shows it}}`.
    static func body(_ delivery: WebhookDelivery, job: JobRecord, publicURL: String?) throws -> Data {
        struct Body: Encodable {
            var event: String
            var deliveryID: Int64
            var job: JobDetails
            enum CodingKeys: String, CodingKey { case event, deliveryID = "delivery_id", job }
        }
        return try MomentsJSON.encoder.encode(
            Body(
                event: delivery.event, deliveryID: delivery.id,
                job: JobDetails(job, links: JobLinks(base: publicURL))))
    }

    /// `{"event": "ping", "delivery_id": …, "endpoint_id": …}`: an operator's test of an endpoint.
    static func pingBody(_ delivery: WebhookDelivery) throws -> Data {
        struct Body: Encodable {
            var event: String
            var deliveryID: Int64
            var endpointID: String?
            enum CodingKeys: String, CodingKey { case event, deliveryID = "delivery_id", endpointID = "endpoint_id" }
        }
        return try MomentsJSON.encoder.encode(
            Body(event: delivery.event, deliveryID: delivery.id, endpointID: delivery.endpointID?.uuidString.lowercased()))
    }

    /// `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`, one `v1` per secret (the
    /// current one first): a receiver accepts the request when any of them matches its secret.
    public static func signature(_ body: Data, timestamp: Int, secrets: [String]) -> String {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let macs = secrets.map { secret in
            Hex.lowercase(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8))))
        }
        return "t=\(timestamp)" + macs.map { ",v1=\($0)" }.joined()
    }

    /// The same with one secret.
    public static func signature(_ body: Data, timestamp: Int, secret: String) -> String {
        signature(body, timestamp: timestamp, secrets: [secret])
    }
}
