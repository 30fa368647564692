import Foundation

/// A `PersistStore` in memory (tests). Values are kept encoded, as a shared store would keep them.
public actor MemoryPersistStore: PersistStore {
    private var values: [String: (data: Data, expires: ContinuousClock.Instant?)] = [:]

    public init() {}

    public func create<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) throws {
        guard live(key) == nil else { throw PersistError.duplicate }
        try store(key, value, expires)
    }

    public func set<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) throws {
        try store(key, value, expires)
    }

    public func get<Value: Codable & Sendable>(key: String, as type: Value.Type) -> Value? {
        live(key).flatMap { try? JSONDecoder().decode(Value.self, from: $0) }
    }

    public func remove(key: String) {
        values[key] = nil
    }

    private func store<Value: Encodable>(_ key: String, _ value: Value, _ expires: Duration?) throws {
        values[key] = (try JSONEncoder().encode(value), expires.map { ContinuousClock.now + $0 })
    }

    private func live(_ key: String) -> Data? {
        guard let entry = values[key] else { return nil }
        if let expires = entry.expires, expires <= .now {
            values[key] = nil
            return nil
        }
        return entry.data
    }
}
