import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import MomentsContract
import NIOCore
import Storage

/// `POST /api/v1/devices` (a new device token, shown once), `GET /api/v1/me` (plan and usage) and
/// `DELETE /api/v1/devices/me` (the device and everything of it erased, its token revoked).
struct DevicesController: Sendable {
    let store: JobStore
    let quota: Quota
    let limiter: RateLimiter
    let jobs: Jobs
    let storage: any ObjectStore
    let pushEnabled: Bool

    static let erasePath = "/api/v1/devices/me"

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.post("devices") { request, context in
            let registered = try await register(request, context: context)
            return EditedResponse(status: .created, response: registered)
        }
        group.get("me") { _, context in try await me(context) }
        group.delete("devices/me") { _, context in try await erase(context) }
        group.put("devices/me/push") { request, context in try await registerPush(request, context: context) }
        group.delete("devices/me/push") { _, context -> HTTPResponse.Status in
            _ = try await store.removePushToken(device: try Self.device(context).id)
            return .noContent
        }
    }

    static func device(_ context: MomentsRequestContext) throws -> Device {
        guard case .device(let device) = context.identity else {
            throw APIError(
                .unauthorized, .authRequired, "Send the device's token as 'Authorization: Bearer <token>'.",
                headers: AuthenticationMiddleware.challenge)
        }
        return device
    }

    /// Registers (or replaces) the device's APNs token: each of its jobs' ends is then pushed.
    private func registerPush(_ request: Request, context: MomentsRequestContext) async throws -> PushRegistration {
        let device = try Self.device(context)
        guard pushEnabled else {
            throw APIError(
                .conflict, .pushUnavailable,
                "This server sends no push notifications (APNs is not configured: APNS_KEY_ID). Poll the status or use events.")
        }
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: 4096) } catch {
            throw APIError(.contentTooLarge, .invalidRequest, "The request body is too large; send a small JSON object.")
        }
        let sent: PushRegistration
        do { sent = try JSONDecoder().decode(PushRegistration.self, from: Data(body.readableBytesView)) } catch {
            throw APIError(.badRequest, .invalidRequest, #"Send JSON like {"token": "<the APNs device token as hex>", "environment": "production"}."#)
        }
        let token = sent.token.lowercased()
        guard (64...200).contains(token.utf8.count), token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw APIError(
                .unprocessableContent, .invalidPushToken,
                "token must be the device token APNs gave the app, as hex digits (64 for today's tokens, at most 200).")
        }
        guard let environment = PushEnvironment(rawValue: sent.environment) else {
            throw APIError(
                .unprocessableContent, .invalidPushEnvironment,
                "environment must be sandbox (a development build) or production (TestFlight and the App Store).")
        }
        let registered = try await store.setPushToken(device: device.id, token: token, environment: environment)
        return PushRegistration(token: token, environment: environment.rawValue, registeredAt: registered)
    }

    /// Erases every job of the device (cancelled first if unfinished), revokes its token and clears
    /// its name, as the App Store asks of apps that make accounts. The same token may ask again: it
    /// finishes what storage cut short and answers with the first erasure's time.
    private func erase(_ context: MomentsRequestContext) async throws -> DeviceErasure {
        let device = try Self.device(context)
        do {
            let (erasedAt, count) = try await jobs.erase(device: device, storage: storage)
            context.logger.notice("device erased", metadata: ["device": "\(device.id)", "jobs": "\(count)"])
            return DeviceErasure(deviceID: device.id, erasedAt: erasedAt, jobsErased: count)
        } catch let error as StorageError {
            throw APIError.erasureCutShort(error)
        }
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
