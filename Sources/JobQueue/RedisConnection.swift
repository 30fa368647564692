import CHiredis
import Dispatch
import Foundation
import MomentsModel
import MomentsSupport

/// A reply from Redis.
public enum RedisValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case array([RedisValue])
    case null
    /// An error reply (`ERR …`, `NOGROUP …`): the command reached Redis and was refused.
    case error(String)

    public var string: String? { if case .string(let s) = self { s } else if case .integer(let i) = self { String(i) } else { nil } }
    public var int: Int? { if case .integer(let i) = self { i } else if case .string(let s) = self { Int(s) } else { nil } }
    public var array: [RedisValue]? { if case .array(let a) = self { a } else { nil } }
    public var isNull: Bool { self == .null }
}

/// A Redis failure with a stable code; the message never contains the password.
public typealias RedisError = CodedFailure<RedisErrorCode>

/// The codes of `RedisError`.
public enum RedisErrorCode: String, Sendable {
    /// Redis could not be reached, or the connection broke; worth retrying.
    case unavailable
    /// Redis answered with an error reply.
    case command
    case invalidConfiguration = "invalid_configuration"
}

/// Where Redis is, from a `REDIS_URL` such as `redis://:password@host:6379/0` (the form Railway,
/// Render's Key Value and Kubernetes secrets provide). `rediss://` (TLS) is refused with a clear
/// message: the hiredis build here has no TLS.
public struct RedisConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var database: Int
    public var connectTimeout: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil,
        database: Int = 0, connectTimeout: Duration = .seconds(3)
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
    }

    public init(url string: String) throws(RedisError) {
        guard let url = URLComponents(string: string), let scheme = url.scheme else {
            throw RedisError(.invalidConfiguration, "REDIS_URL must look like redis://[:password@]host:6379[/database].")
        }
        guard scheme == "redis" else {
            throw RedisError(
                .invalidConfiguration,
                scheme == "rediss"
                    ? "REDIS_URL uses rediss:// (TLS), which this build does not support; use redis:// on a private network."
                    : "REDIS_URL must start with redis://.")
        }
        guard let host = url.host, !host.isEmpty else { throw RedisError(.invalidConfiguration, "REDIS_URL has no host.") }
        let path = url.path.drop(while: { $0 == "/" })
        guard path.isEmpty || Int(path) != nil else {
            throw RedisError(.invalidConfiguration, "REDIS_URL's path must be a database number, like /0.")
        }
        let user = url.user.flatMap { $0.isEmpty || $0 == "default" ? nil : ($0.removingPercentEncoding ?? $0) }
        self.init(
            host: host, port: url.port ?? 6379, username: user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 }, database: Int(path) ?? 0)
    }

    public var description: String {
        "redis://\(username ?? "")\(password == nil ? "" : ":***")\(username == nil && password == nil ? "" : "@")\(host):\(port)/\(database)"
    }
}

/// One hiredis connection. hiredis is blocking and not thread-safe, so every call runs on this
/// connection's own serial queue, off Swift's cooperative threads. A broken connection is dropped
/// and opened again by the next call.
final class RedisConnection: @unchecked Sendable {
    private let configuration: RedisConfiguration
    private let queue: DispatchQueue
    /// Touched only on `queue`.
    private var context: UnsafeMutablePointer<redisContext>?

    init(configuration: RedisConfiguration, label: String) {
        self.configuration = configuration
        self.queue = DispatchQueue(label: "moments.redis.\(label)")
    }

    deinit {
        if let context { redisFree(context) }
    }

    /// Sends one command. `timeout` bounds the wait for the reply (a blocking command needs more
    /// than its own block time). Throws `.unavailable` if the connection fails; error replies come
    /// back as `.error`.
    func send(_ arguments: [String], timeout: Duration = .seconds(5)) async throws(RedisError) -> RedisValue {
        let result: Result<RedisValue, RedisError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: self.sendOnQueue(arguments, timeout: timeout))
            }
        }
        return try result.get()
    }

    /// Closes the socket (the next `send` reconnects). Used to abandon a blocked read.
    func close() {
        queue.async {
            if let context = self.context { redisFree(context) }
            self.context = nil
        }
    }

    private func sendOnQueue(_ arguments: [String], timeout: Duration) -> Result<RedisValue, RedisError> {
        do throws(RedisError) {
            let context = try connected()
            moments_redis_set_timeout(context, timeout.inMilliseconds)
            guard let raw = Self.command(context, arguments) else {
                let reason = Self.contextError(context)
                drop()
                return .failure(RedisError(.unavailable, "Redis at \(configuration.host):\(configuration.port) did not answer: \(reason)."))
            }
            defer { freeReplyObject(raw) }
            let value = Self.value(raw.assumingMemoryBound(to: redisReply.self))
            // Replies that mean "this server cannot serve you right now": a restart still loading its
            // data, a replica after a failover, a cluster re-sharding. Retried like a lost connection.
            if case .error(let message) = value,
                ["LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"].contains(where: { message.hasPrefix($0) })
            {
                drop()
                return .failure(RedisError(.unavailable, "Redis at \(configuration.host):\(configuration.port) cannot serve yet: \(message)"))
            }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    private func connected() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        if let context { return context }
        guard
            let context = moments_redis_connect(
                configuration.host, Int32(configuration.port),
                configuration.connectTimeout.inMilliseconds)
        else {
            throw RedisError(.unavailable, "Could not allocate a Redis connection.")
        }
        if context.pointee.err != 0 {
            let reason = Self.contextError(context)
            redisFree(context)
            throw RedisError(.unavailable, "Could not connect to Redis at \(configuration.host):\(configuration.port): \(reason).")
        }
        self.context = context
        var setup: [[String]] = []
        if let password = configuration.password {
            setup.append(configuration.username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
        }
        if configuration.database != 0 { setup.append(["SELECT", String(configuration.database)]) }
        for command in setup {
            guard let raw = Self.command(context, command) else {
                drop()
                throw RedisError(.unavailable, "Redis at \(configuration.host):\(configuration.port) closed the connection during set-up.")
            }
            let reply = Self.value(raw.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(raw)
            if case .error(let message) = reply {
                drop()
                if message.hasPrefix("LOADING") {
                    throw RedisError(.unavailable, "Redis at \(configuration.host):\(configuration.port) is still loading its data.")
                }
                // Never echo the password; Redis's own message does not contain it.
                throw RedisError(.command, "Redis refused \(command[0]): \(message)")
            }
        }
        return context
    }

    private func drop() {
        if let context { redisFree(context) }
        context = nil
    }

    private static func command(_ context: UnsafeMutablePointer<redisContext>, _ arguments: [String]) -> UnsafeMutableRawPointer? {
        // All arguments in one buffer, so every pointer stays valid for the whole call.
        var storage: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(storage.count)
            storage.append(contentsOf: argument.utf8)
            lengths.append(storage.count - offsets[offsets.count - 1])
        }
        storage.append(0)
        return storage.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return redisCommandArgv(context, Int32(arguments.count), &pointers, lengths)
        }
    }

    private static func value(_ reply: UnsafeMutablePointer<redisReply>) -> RedisValue {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING, REDIS_REPLY_STATUS:
            return .string(text(r))
        case REDIS_REPLY_INTEGER:
            return .integer(Int(r.integer))
        case REDIS_REPLY_ARRAY:
            return .array((0..<r.elements).map { value(r.element[$0]!) })
        case REDIS_REPLY_ERROR:
            return .error(text(r))
        default:
            return .null
        }
    }

    private static func text(_ r: redisReply) -> String {
        guard let str = r.str else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: str, count: r.len), as: UTF8.self)
    }

    private static func contextError(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            return text.isEmpty ? "connection lost" : text
        }
    }
}
