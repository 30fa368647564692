import Foundation
import Hummingbird
import JobStore
import MomentsContract
import NIOCore

/// The request context of every route: JSON dates as the app wants them, who is asking and from where.
public struct MomentsRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `AuthenticationMiddleware` from the bearer token.
    public var identity: Identity = .anonymous
    /// Set by the console's middleware for a signed-in operator.
    var consoleSession: ConsoleSession?
    /// Set by `RateLimitHeadersMiddleware` on requests a limiter may count.
    var rateLimit: RateLimitNote?
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    public var responseEncoder: JSONEncoder { MomentsJSON.encoder }
}

/// Who sent a request.
public enum Identity: Sendable, Equatable {
    /// No token (allowed only with `AUTH_REQUIRED=false`): owns the jobs that have no owner.
    case anonymous
    case device(Device)

    /// The owner recorded on, and required of, jobs.
    public var owner: String? {
        if case .device(let device) = self { device.owner } else { nil }
    }
}
