import Foundation
import Jobs
import MomentsSupport

/// A `PersistStore` on Redis: each value a JSON string under `<prefix>:<key>`, expiring with `PX`.
public struct RedisPersistStore: PersistStore {
    let client: RedisClient
    let prefix: String

    /// `prefix` keeps these keys apart from the queue's and other deployments' on a shared Redis.
    public init(client: RedisClient, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    public func create<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) async throws {
        let reply = try await client.send(command(key, value, expires) + ["NX"])
        guard reply.string == "OK" else { throw PersistError.duplicate }
    }

    public func set<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) async throws {
        try await client.send(command(key, value, expires))
    }

    public func get<Value: Codable & Sendable>(key: String, as type: Value.Type) async throws -> Value? {
        guard let json = try await client.send(["GET", "\(prefix):\(key)"]).string else { return nil }
        return try? JSONDecoder().decode(Value.self, from: Data(json.utf8))
    }

    public func remove(key: String) async throws {
        try await client.send(["DEL", "\(prefix):\(key)"])
    }

    private func command<Value: Encodable>(_ key: String, _ value: Value, _ expires: Duration?) throws -> [String] {
        let json = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let expiry = expires.map { ["PX", String(max(1, $0.inMilliseconds))] } ?? []
        return ["SET", "\(prefix):\(key)", json] + expiry
    }
}
