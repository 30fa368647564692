import Foundation
import Logging
import MomentsModel
import MomentsSupport
import Synchronization

/// A small pool of Redis connections for ordinary commands, retrying with backoff while Redis is
/// away. Blocking reads get a connection of their own (`dedicatedConnection`).
public final class RedisClient: Sendable {
    public let configuration: RedisConfiguration
    let logger: Logger
    /// How long a command keeps retrying while Redis is unreachable before it gives up.
    public let retryFor: Duration
    private let connections: [RedisConnection]
    /// Round-robin over the pool.
    private let next = Atomic<Int>(0)

    public init(configuration: RedisConfiguration, connections: Int = 4, retryFor: Duration = .seconds(15), logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.retryFor = retryFor
        self.connections = (0..<max(1, connections)).map { RedisConnection(configuration: configuration, label: "pool-\($0)") }
    }

    /// Sends a command; error replies become `RedisError(.command)`. Connection failures are retried
    /// with exponential backoff (50 ms doubling to 2 s) for up to `retryFor`; every command this
    /// package sends is safe to repeat.
    @discardableResult
    public func send(_ arguments: [String]) async throws(RedisError) -> RedisValue {
        let connection = connections[Int(next.wrappingAdd(1, ordering: .relaxed).newValue.magnitude % UInt(connections.count))]
        return try await Self.withReconnect(retryFor: retryFor, logger: logger) { () throws(RedisError) in
            try await connection.send(arguments)
        }
    }

    /// Runs a Lua script (atomic on the server).
    @discardableResult
    public func eval(_ script: String, keys: [String], arguments: [String]) async throws(RedisError) -> RedisValue {
        try await send(["EVAL", script, String(keys.count)] + keys + arguments)
    }

    /// Whether Redis answers PING now (one try, no retries: for readiness checks).
    public func ping() async -> Bool {
        (try? await connections[Int(next.wrappingAdd(1, ordering: .relaxed).newValue.magnitude % UInt(connections.count))].send(
            ["PING"], timeout: .seconds(2)))?.string == "PONG"
    }

    func dedicatedConnection(label: String) -> RedisConnection {
        RedisConnection(configuration: configuration, label: label)
    }

    static func withReconnect(
        retryFor: Duration, logger: Logger,
        _ body: () async throws(RedisError) -> RedisValue
    ) async throws(RedisError) -> RedisValue {
        var logged = false
        let value = try await Backoff.retrying(
            for: retryFor, first: .milliseconds(50), cap: .seconds(2),
            when: { (error: RedisError) in error.code == .unavailable },
            onRetry: { error, _ in
                if !logged { logger.warning("redis unavailable; retrying", metadata: ["error": "\(error.message)"]) }
                logged = true
            }
        ) { () throws(RedisError) -> RedisValue in
            let value = try await body()
            if case .error(let message) = value { throw RedisError(.command, message) }
            return value
        }
        if logged { logger.info("redis reachable again") }
        return value
    }
}
