import Foundation
import JobStore
import Jobs
import MomentsContract
import MomentsModel

/// The monthly highlight quota of the free plan.
struct Quota: Sendable {
    let jobs: Jobs
    let freeMonthlyHighlights: Int

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
        let usage = try await jobs.monthlyUsage(owner: owner)
        if usage.used >= limit { throw Self.exceeded(used: usage.used, limit: limit, resetsAt: usage.periodEnd) }
    }

    /// Submits the job (row, then queue) within the owner's quota (atomically), or answers 402.
    func submit(_ job: NewJob, identity: Identity) async throws -> JobRecord {
        switch try await jobs.submit(job, monthlyLimit: limit(for: identity)) {
        case .created(let record):
            return record
        case .quotaExceeded(let used, let limit):
            let usage = try? await jobs.monthlyUsage(owner: job.owner ?? "")
            throw Self.exceeded(used: used, limit: limit, resetsAt: usage?.periodEnd)
        }
    }

    static func exceeded(used: Int, limit: Int, resetsAt: Date?) -> APIError {
        let when = resetsAt.map { " or wait until \(monthDay.string(from: $0))" } ?? ""
        return APIError(
            .init(code: 402, reasonPhrase: "Payment Required"), .quotaExceeded,
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
