import Foundation
import MomentsModel

/// `POST /api/v1/devices`: the body (optional) and the answer, which holds the only copy of the token.
public struct DeviceRegistrationRequest: Codable, Equatable, Sendable {
    public var name: String?

    public init(name: String?) { self.name = name }
}

public struct DeviceRegistration: Codable, Equatable, Sendable {
    public var deviceID: UUID
    /// `mdt_…`: send as `Authorization: Bearer <token>`. Shown once; keep it in the keychain.
    public var token: String
    public var plan: Plan
    public var createdAt: Date

    public init(deviceID: UUID, token: String, plan: Plan, createdAt: Date) {
        self.deviceID = deviceID
        self.token = token
        self.plan = plan
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey { case deviceID = "device_id", token, plan, createdAt = "created_at" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID.uuidString.lowercased(), forKey: .deviceID)
        try c.encode(token, forKey: .token)
        try c.encode(plan, forKey: .plan)
        try c.encode(createdAt, forKey: .createdAt)
    }
}

/// `GET /api/v1/me`: the device's plan and this month's usage.
/// `PUT /api/v1/devices/me/push` (API 1.2): the device's APNs token, as hex, and which APNs
/// environment it belongs to (`sandbox` for development builds, `production` for TestFlight and
/// the App Store). The answer is the same, with when it was registered.
public struct PushRegistration: Codable, Equatable, Sendable {
    public var token: String
    public var environment: String
    public var registeredAt: Date?

    public init(token: String, environment: String, registeredAt: Date? = nil) {
        self.token = token
        self.environment = environment
        self.registeredAt = registeredAt
    }

    enum CodingKeys: String, CodingKey { case token, environment, registeredAt = "registered_at" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(environment, forKey: .environment)
        try c.encodeIfPresent(registeredAt, forKey: .registeredAt)
    }
}

/// `DELETE /api/v1/devices/me` (API 1.2): the device erased, with all its jobs' files; its token
/// no longer works (but may repeat this request).
public struct DeviceErasure: Codable, Equatable, Sendable {
    public var deviceID: UUID
    /// When the device erased itself (the first time it asked).
    public var erasedAt: Date
    /// Jobs erased by this request (0 when asked again after a whole erasure).
    public var jobsErased: Int

    public init(deviceID: UUID, erasedAt: Date, jobsErased: Int) {
        self.deviceID = deviceID
        self.erasedAt = erasedAt
        self.jobsErased = jobsErased
    }

    enum CodingKeys: String, CodingKey { case deviceID = "device_id", erasedAt = "erased_at", jobsErased = "jobs_erased" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID.uuidString.lowercased(), forKey: .deviceID)
        try c.encode(erasedAt, forKey: .erasedAt)
        try c.encode(jobsErased, forKey: .jobsErased)
    }
}

public struct Account: Codable, Equatable, Sendable {
    public struct Usage: Codable, Equatable, Sendable {
        /// Highlights made this calendar month (UTC); failed and cancelled jobs do not count.
        public var used: Int
        /// The month's allowance; nil when unlimited.
        public var limit: Int?
        public var remaining: Int?
        public var periodStart: Date
        public var resetsAt: Date

        public init(used: Int, limit: Int?, remaining: Int?, periodStart: Date, resetsAt: Date) {
            self.used = used
            self.limit = limit
            self.remaining = remaining
            self.periodStart = periodStart
            self.resetsAt = resetsAt
        }

        enum CodingKeys: String, CodingKey { case used, limit, remaining, periodStart = "period_start", resetsAt = "resets_at" }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(used, forKey: .used)
            try c.encode(limit, forKey: .limit)
            try c.encode(remaining, forKey: .remaining)
            try c.encode(periodStart, forKey: .periodStart)
            try c.encode(resetsAt, forKey: .resetsAt)
        }
    }

    public var deviceID: UUID
    public var name: String?
    public var plan: Plan
    /// What the app shows: "Free: 3 videos/month" or "Pro: Unlimited".
    public var planDescription: String
    public var usage: Usage
    public var createdAt: Date

    public init(deviceID: UUID, name: String?, plan: Plan, planDescription: String, usage: Usage, createdAt: Date) {
        self.deviceID = deviceID
        self.name = name
        self.plan = plan
        self.planDescription = planDescription
        self.usage = usage
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", name, plan, planDescription = "plan_description", usage, createdAt = "created_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID.uuidString.lowercased(), forKey: .deviceID)
        try c.encode(name, forKey: .name)
        try c.encode(plan, forKey: .plan)
        try c.encode(planDescription, forKey: .planDescription)
        try c.encode(usage, forKey: .usage)
        try c.encode(createdAt, forKey: .createdAt)
    }
}
