import Crypto
import CurlHTTP
import Foundation
import JobStore
import Logging
import MomentsContract
import MomentsModel
import MomentsSupport
import Synchronization

/// How pushes are sent through Apple's Push Notification service, with token-based
/// authentication: `APNS_KEY_FILE` (the team's `.p8` key; or `APNS_KEY`, its PEM text),
/// `APNS_KEY_ID`, `APNS_TEAM_ID` and `APNS_TOPIC` (the app's bundle id). Without a key, no push is
/// sent (and the API refuses push registrations). `APNS_PRODUCTION_URL` and `APNS_SANDBOX_URL`
/// name the hosts (Apple's by default; a test's own server otherwise), `APNS_CA_FILE` certificates
/// to trust instead of the system's. `PUSH_MAX_ATTEMPTS` (8) with backoff from
/// `PUSH_RETRY_BASE_SECONDS` (10), as webhooks.
public struct PushConfiguration: Sendable {
    public var key: String
    public var keyID: String
    public var teamID: String
    public var topic: String
    public var productionURL: String
    public var sandboxURL: String
    public var caFile: String?
    public var maxAttempts: Int
    public var retryBase: Duration
    public var pollInterval: Duration = .seconds(1)

    /// The configuration the environment gives; nil when `APNS_KEY_ID` is not set (pushes off).
    public static func from(_ environment: Settings) throws(SettingError) -> PushConfiguration? {
        guard let keyID = environment["APNS_KEY_ID"], !keyID.isEmpty else {
            // Half a configuration would leave pushes off without a word.
            if let set = ["APNS_KEY_FILE", "APNS_KEY", "APNS_TEAM_ID", "APNS_TOPIC"].first(where: { !(environment[$0] ?? "").isEmpty }) {
                throw SettingError("\(set) is set but APNS_KEY_ID is not: set the key's id too (or neither, for no pushes).")
            }
            return nil
        }
        var key = environment["APNS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if key == nil, let path = environment["APNS_KEY_FILE"], !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw SettingError("APNS_KEY_FILE (\(path)) cannot be read.")
            }
            key = text
        }
        guard let key else { throw SettingError("APNS_KEY_ID is set: set APNS_KEY_FILE to the .p8 key it names (or APNS_KEY to its text).") }
        guard (try? P256.Signing.PrivateKey(pemRepresentation: key)) != nil else {
            throw SettingError("The APNs key (APNS_KEY_FILE or APNS_KEY) is not a P-256 private key in PEM, as Apple's .p8 files are.")
        }
        guard let team = environment["APNS_TEAM_ID"], !team.isEmpty, let topic = environment["APNS_TOPIC"], !topic.isEmpty else {
            throw SettingError("APNS_KEY_ID is set: set APNS_TEAM_ID (your team's id) and APNS_TOPIC (the app's bundle id) too.")
        }
        func host(_ value: String?, _ name: String, _ standard: String) throws(SettingError) -> String {
            let text = value.flatMap { $0.isEmpty ? nil : $0 } ?? standard
            guard text.hasPrefix("https://"), URL(string: text)?.host != nil else { throw SettingError("\(name) must be an https:// URL.") }
            return text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        return PushConfiguration(
            key: key, keyID: keyID, teamID: team, topic: topic,
            productionURL: try host(environment["APNS_PRODUCTION_URL"], "APNS_PRODUCTION_URL", "https://api.push.apple.com"),
            sandboxURL: try host(environment["APNS_SANDBOX_URL"], "APNS_SANDBOX_URL", "https://api.sandbox.push.apple.com"),
            caFile: environment["APNS_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 },
            maxAttempts: try Setting.integer("PUSH_MAX_ATTEMPTS", in: environment, default: 8, range: 1...50),
            retryBase: .seconds(try Setting.integer("PUSH_RETRY_BASE_SECONDS", in: environment, default: 10, range: 1...3600)))
    }
}

/// The provider token APNs asks for: an ES256 JWT (`kid` the key's id, `iss` the team, `iat` the
/// time), signed once and reused for `lifetime` (Apple refuses tokens older than an hour and
/// signing more often than every 20 minutes), or made again at once when APNs says it expired.
final class ProviderToken: Sendable {
    let configuration: PushConfiguration
    let lifetime: Duration
    private let current = Mutex<(token: String, issued: Date)?>(nil)

    init(configuration: PushConfiguration, lifetime: Duration = .seconds(50 * 60)) {
        self.configuration = configuration
        self.lifetime = lifetime
    }

    /// The token to send now.
    func token(now: Date = Date()) throws -> String {
        try current.withLock { current in
            if let current, now.timeIntervalSince(current.issued) < lifetime.inSeconds { return current.token }
            let made = try Self.sign(configuration, issued: now)
            current = (made, now)
            return made
        }
    }

    /// Forgets the token `expired` (APNs answered ExpiredProviderToken), unless a newer one was made meanwhile.
    func refresh(after expired: String) {
        current.withLock { current in if current?.token == expired { current = nil } }
    }

    static func sign(_ configuration: PushConfiguration, issued: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(configuration.keyID)"}"#
        let claims = #"{"iss":"\#(configuration.teamID)","iat":\#(Int(issued.timeIntervalSince1970))}"#
        let input = Base64URL.encode(header.utf8) + "." + Base64URL.encode(claims.utf8)
        let key = try P256.Signing.PrivateKey(pemRepresentation: configuration.key)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// Sends the pushes of jobs that ended (`push_deliveries`, written by a trigger in the statement
/// that ended the job: the outbox, as for webhooks), so a push never delays a job's completion.
/// Each is an alert over HTTP/2 to APNs with localisable keys (`MOMENTS_READY_TITLE`,
/// `MOMENTS_READY_BODY`; `MOMENTS_FAILED_TITLE`, `MOMENTS_FAILED_BODY`), a `thread-id` per job, and
/// the job's id, status and metadata in the payload. APNs' answers: 200 delivered; 410
/// `Unregistered` and 400 `BadDeviceToken` remove the token and stop; 403 `ExpiredProviderToken`
/// makes a new JWT and tries again at once; 429 and 5xx try again with backoff; anything else is
/// recorded as given up, with APNs' reason (the console's job page shows it).
public struct PushDispatcher: Sendable {
    let store: JobStore
    let configuration: PushConfiguration?
    let logger: Logger
    private let provider: ProviderToken?

    public init(store: JobStore, configuration: PushConfiguration?, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        provider = configuration.map { ProviderToken(configuration: $0) }
    }

    /// Sends due pushes until the task is cancelled; returns at once when APNs is not configured.
    public func run() async {
        guard let configuration, let provider else {
            logger.info("pushes off: APNS_KEY_ID is not set")
            return
        }
        await OutboxSender.run(
            "pushes", every: configuration.pollInterval, logger: logger, take: { try await store.takeDuePushes(limit: 16, lease: .seconds(60)) },
            send: { await self.deliver($0, configuration: configuration, provider: provider) })
    }

    func deliver(_ push: PushDelivery, configuration: PushConfiguration, provider: ProviderToken) async {
        var logger = self.logger
        logger[metadataKey: "job_id"] = "\(push.jobID.uuidString.lowercased())"
        logger[metadataKey: "push"] = "\(push.id)"
        do {
            guard let job = try await store.job(push.jobID) else {
                try await store.recordPushAttempt(push, .failed(status: nil, reason: "the job no longer exists", retryAt: nil))
                return
            }
            let outcome = await attempt(push, job: job, configuration: configuration, provider: provider)
            switch outcome {
            case .delivered: logger.info("push delivered", metadata: ["attempt": "\(push.attempt)"])
            case .failed(let status, let reason, let retryAt):
                logger.warning(
                    retryAt == nil ? "push given up" : "push failed; will retry",
                    metadata: ["status": "\(status.map(String.init) ?? "none")", "reason": "\(reason)", "attempt": "\(push.attempt)"])
                if reason == "Unregistered" || reason == "BadDeviceToken" {
                    try await store.removePushToken(device: push.deviceID, token: push.token)
                }
            }
            try await store.recordPushAttempt(push, outcome)
        } catch {
            logger.warning("push attempt not made or not recorded", metadata: ["error": "\(error)"])
        }
    }

    func attempt(_ push: PushDelivery, job: JobRecord, configuration: PushConfiguration, provider: ProviderToken) async -> PushAttemptOutcome {
        let retryAt =
            push.attempt < configuration.maxAttempts
            ? Date().addingTimeInterval(Backoff.delay(afterAttempt: push.attempt, first: configuration.retryBase, cap: .seconds(3600)).inSeconds)
            : nil
        let jwt: String
        let body: Data
        do {
            jwt = try provider.token()
            body = try Self.payload(push, job: job)
        } catch {
            return .failed(status: nil, reason: "the push could not be made: \(error)", retryAt: nil)
        }
        let base = push.environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
        var request = CurlRequest(
            method: "POST", url: "\(base)/3/device/\(push.token)",
            headers: [
                ("authorization", "bearer \(jwt)"), ("apns-topic", configuration.topic), ("apns-push-type", "alert"),
                ("apns-priority", "10"), ("apns-expiration", String(Int(Date().timeIntervalSince1970) + 86_400)),
                ("apns-collapse-id", push.jobID.uuidString.lowercased()), ("content-type", "application/json"),
            ],
            body: .bytes(Array(body)), stallTimeout: 10, connectTimeout: 5, totalTimeout: 15)
        request.http2 = true
        request.caFile = configuration.caFile
        switch await Curl.perform(request) {
        case .success(let response) where response.status == 200:
            return .delivered
        case .success(let response):
            let reason = (try? JSONDecoder().decode([String: String].self, from: Data(response.body)))?["reason"] ?? "HTTP \(response.status)"
            switch (response.status, reason) {
            case (410, _), (400, "BadDeviceToken"): return .failed(status: response.status, reason: reason, retryAt: nil)
            case (403, "ExpiredProviderToken"):
                provider.refresh(after: jwt)
                return .failed(status: 403, reason: reason, retryAt: push.attempt < configuration.maxAttempts ? Date() : nil)
            case (429, _), (500..<600, _): return .failed(status: response.status, reason: reason, retryAt: retryAt)
            default: return .failed(status: response.status, reason: reason, retryAt: nil)
            }
        case .failure(let failure):
            return .failed(status: nil, reason: failure.message, retryAt: retryAt)
        }
    }

    /// The alert: localisable keys the app's `Localizable.strings` names, a thread per job, and
    /// the job's id, status and metadata for the app to open it.
    static func payload(_ push: PushDelivery, job: JobRecord) throws -> Data {
        struct Alert: Encodable {
            var titleLocKey: String
            var locKey: String
            var locArgs: [String]
            enum CodingKeys: String, CodingKey { case titleLocKey = "title-loc-key", locKey = "loc-key", locArgs = "loc-args" }
        }
        struct APS: Encodable {
            var alert: Alert
            var sound = "default"
            var threadID: String
            enum CodingKeys: String, CodingKey { case alert, sound, threadID = "thread-id" }
        }
        struct Payload: Encodable {
            var aps: APS
            var jobID: String
            var status: String
            var metadata: [String: String]?
            enum CodingKeys: String, CodingKey { case aps, jobID = "job_id", status, metadata }
        }
        let completed = job.status == .completed
        let id = job.id.uuidString.lowercased()
        return try MomentsJSON.encoder.encode(
            Payload(
                aps: APS(
                    alert: Alert(
                        titleLocKey: completed ? "MOMENTS_READY_TITLE" : "MOMENTS_FAILED_TITLE",
                        locKey: completed ? "MOMENTS_READY_BODY" : "MOMENTS_FAILED_BODY", locArgs: [job.originalFilename ?? ""]),
                    threadID: "job-\(id)"),
                jobID: id, status: job.status.rawValue, metadata: job.metadata))
    }
}
