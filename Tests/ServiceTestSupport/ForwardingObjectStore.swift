import Foundation
import Storage

/// Storage that passes every call to `inner`: a test's store implements only the calls it changes
/// (a slow delete, an upload held at a gate, URLs signed as S3 would).
public protocol ForwardingObjectStore: ObjectStore {
    var inner: any ObjectStore { get }
}

extension ForwardingObjectStore {
    @discardableResult
    public func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo {
        try await inner.put(key: key, from: file, contentType: contentType)
    }

    @discardableResult
    public func get(key: String, to file: URL, limit: Int64?) async throws(StorageError) -> ObjectInfo {
        try await inner.get(key: key, to: file, limit: limit)
    }

    public func read(key: String, offset: Int64, length: Int) async throws(StorageError) -> [UInt8] {
        try await inner.read(key: key, offset: offset, length: length)
    }

    @discardableResult
    public func copy(from source: String, to key: String) async throws(StorageError) -> ObjectInfo {
        try await inner.copy(from: source, to: key)
    }

    public func head(key: String) async throws(StorageError) -> ObjectInfo { try await inner.head(key: key) }

    public func delete(key: String) async throws(StorageError) { try await inner.delete(key: key) }

    public func list(prefix: String, after: String?, limit: Int) async throws(StorageError) -> [StoredObject] {
        try await inner.list(prefix: prefix, after: after, limit: limit)
    }
}
