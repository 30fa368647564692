import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import NIOCore

/// `POST /api/v1/devices` (a new device token, shown once) and `GET /api/v1/me` (plan and usage).
struct DevicesController: Sendable {
    let store: JobStore
    let quota: Quota
    let limiter: RateLimiter

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.post("devices") { request, context in
            let registered = try await register(request, context: context)
            return EditedResponse(status: .created, response: registered)
        }
        group.get("me") { _, context in try await me(context) }
    }

    private func register(_ request: Request, context: MomentsRequestContext) async throws -> DeviceRegistration {
        try await limiter.admitRegistration(request, context: context)
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: 4096) } catch {
            throw APIError(.contentTooLarge, "invalid_request", "The request body is too large; send a small JSON object.")
        }
        var registration = DeviceRegistrationRequest(name: nil)
        if body.readableBytes > 0 {
            do { registration = try JSONDecoder().decode(DeviceRegistrationRequest.self, from: Data(body.readableBytesView)) } catch {
                throw APIError(.badRequest, "invalid_request", #"Send JSON like {"name": "Anna's iPhone"}, or no body."#)
            }
        }
        let name = registration.name.map { String(UploadController.sanitize($0).prefix(100)) }
        let token = DeviceToken.generate()
        let device = try await store.registerDevice(tokenSHA256: DeviceToken.sha256(token), name: name)
        context.logger.info("device registered", metadata: ["device": "\(device.id)"])
        return DeviceRegistration(deviceID: device.id, token: token, plan: device.plan, createdAt: device.createdAt)
    }

    private func me(_ context: MomentsRequestContext) async throws -> Account {
        guard case .device(let device) = context.identity else {
            throw APIError(.unauthorized, "auth_required", "Send a device token as 'Authorization: Bearer <token>' to see its plan.",
                           headers: AuthenticationMiddleware.challenge)
        }
        let usage = try await store.monthlyUsage(owner: device.owner)
        let limit = quota.limit(for: device.plan)
        return Account(deviceID: device.id, name: device.name, plan: device.plan,
                  planDescription: limit.map { "Free: \($0) videos/month" } ?? "Pro: Unlimited",
                  usage: .init(used: usage.used, limit: limit, remaining: limit.map { max(0, $0 - usage.used) },
                               periodStart: usage.periodStart, resetsAt: usage.periodEnd),
                  createdAt: device.createdAt)
    }
}

/// The monthly highlight quota of the free plan.
struct Quota: Sendable {
    let jobs: Jobs
    let freeMonthlyHighlights: Int
    var store: JobStore { jobs.store }

    /// Highlights per month for a plan; nil is unlimited.
    func limit(for plan: Plan) -> Int? {
        plan == .free ? freeMonthlyHighlights : nil
    }

    /// The limit that applies to the request's owner (anonymous use has none).
    func limit(for identity: Identity) -> Int? {
        if case .device(let device) = identity { limit(for: device.plan) } else { nil }
    }

    /// Refuses early (before any bytes are taken) when the owner has no highlight left this month.
    func checkRoom(_ identity: Identity) async throws {
        guard let owner = identity.owner, let limit = limit(for: identity) else { return }
        let usage = try await store.monthlyUsage(owner: owner)
        if usage.used >= limit { throw Self.exceeded(used: usage.used, limit: limit, resetsAt: usage.periodEnd) }
    }

    /// Submits the job (row, then queue) within the owner's quota (atomically), or answers 402.
    func submit(_ job: NewJob, identity: Identity) async throws -> JobRecord {
        switch try await jobs.submit(job, monthlyLimit: limit(for: identity)) {
        case .created(let record):
            return record
        case .quotaExceeded(let used, let limit):
            let usage = try? await store.monthlyUsage(owner: job.owner ?? "")
            throw Self.exceeded(used: used, limit: limit, resetsAt: usage?.periodEnd)
        }
    }

    static func exceeded(used: Int, limit: Int, resetsAt: Date?) -> APIError {
        let when = resetsAt.map { " or wait until \(monthDay.string(from: $0))" } ?? ""
        return APIError(.init(code: 402, reasonPhrase: "Payment Required"), "quota_exceeded",
                        "You have made \(used) of your \(limit) free highlights this month. Upgrade to Pro for unlimited highlights\(when).")
    }

    /// "December 1": when a month (UTC) begins.
    private static let monthDay: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMMM d"
        return formatter
    }()
}
