import Foundation

/// Small values kept for a while under a key (upload reservations), shared by every API node.
/// Shaped like Hummingbird's `PersistDriver`: Redis in production, `MemoryPersistStore` in tests.
public protocol PersistStore: Sendable {
    /// Stores `value` under `key` unless something is there already (then `PersistError.duplicate`).
    func create<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) async throws
    /// Stores `value` under `key`, replacing what was there.
    func set<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) async throws
    /// The value under `key`, or nil when there is none (or it expired, or it is not a `Value`).
    func get<Value: Codable & Sendable>(key: String, as type: Value.Type) async throws -> Value?
    /// Removes the value; removing one that is not there succeeds.
    func remove(key: String) async throws
}

extension PersistStore {
    /// Stores `value` under `key` unless something is there already; false when something was
    /// (a claim only one caller wins).
    public func claim<Value: Codable & Sendable>(key: String, value: Value, expires: Duration?) async throws -> Bool {
        do {
            try await create(key: key, value: value, expires: expires)
            return true
        } catch let error as PersistError where error == .duplicate {
            return false
        }
    }
}

/// A `PersistStore` refusal.
public struct PersistError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// `create` found a value under the key already.
    public static let duplicate = PersistError(description: "a value is already stored under this key")
}
