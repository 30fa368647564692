import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import MomentsContract
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
            throw APIError(.contentTooLarge, .invalidRequest, "The request body is too large; send a small JSON object.")
        }
        var registration = DeviceRegistrationRequest(name: nil)
        if body.readableBytes > 0 {
            do { registration = try JSONDecoder().decode(DeviceRegistrationRequest.self, from: Data(body.readableBytesView)) } catch {
                throw APIError(.badRequest, .invalidRequest, #"Send JSON like {"name": "Anna's iPhone"}, or no body."#)
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
            throw APIError(
                .unauthorized, .authRequired, "Send a device token as 'Authorization: Bearer <token>' to see its plan.",
                headers: AuthenticationMiddleware.challenge)
        }
        let usage = try await store.monthlyUsage(owner: device.owner)
        let limit = quota.limit(for: device.plan)
        return Account(
            deviceID: device.id, name: device.name, plan: device.plan,
            planDescription: limit.map { "Free: \($0) videos/month" } ?? "Pro: Unlimited",
            usage: .init(
                used: usage.used, limit: limit, remaining: limit.map { max(0, $0 - usage.used) },
                periodStart: usage.periodStart, resetsAt: usage.periodEnd),
            createdAt: device.createdAt)
    }
}
