import Foundation
import MomentsModel

/// Where sources and highlights live: S3-compatible storage or a local folder.
/// Objects move to and from files, never whole through memory.
public protocol ObjectStore: Sendable {
    /// Stores the file at `file` under `key`, replacing any object there (readers see old or new, never half).
    @discardableResult
    func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo
    /// Writes the object to `file` (created or replaced).
    @discardableResult
    func get(key: String, to file: URL) async throws(StorageError) -> ObjectInfo
    /// The object's size and type; throws `notFound` if there is none.
    func head(key: String) async throws(StorageError) -> ObjectInfo
    /// Removes the object; removing one that is not there succeeds.
    func delete(key: String) async throws(StorageError)
    /// The store's URL signer, when it can hand out URLs for direct transfers (S3 can; a folder cannot).
    var presigning: (any PresigningObjectStore)? { get }
}

extension ObjectStore {
    public var presigning: (any PresigningObjectStore)? { nil }
}

/// An object store that signs short-lived URLs a client uses to GET or PUT an object directly.
public protocol PresigningObjectStore: ObjectStore {
    /// A URL for `method` (GET or PUT) on `key`, valid for `expires`.
    func signedURL(for key: String, method: String, expires: Duration) throws(StorageError) -> URL
}

public struct ObjectInfo: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var contentType: String?

    public init(key: String, size: Int64, contentType: String? = nil) {
        self.key = key
        self.size = size
        self.contentType = contentType
    }
}

/// A storage failure with a stable code. Messages never contain secrets.
public typealias StorageError = CodedFailure<StorageErrorCode>

/// The codes of `StorageError`.
public enum StorageErrorCode: String, Sendable {
    case notFound = "not_found"
    case invalidKey = "invalid_key"
    /// Bad credentials, a clock too far off, or no permission.
    case forbidden
    /// The store could not be reached or failed; worth retrying.
    case unavailable
    case ioError = "io_error"
    /// A setting is missing or malformed (the message names it).
    case invalidConfiguration = "invalid_configuration"
    /// The calling task was cancelled and the transfer stopped.
    case cancelled
}

/// Object keys: relative, `/`-separated, no empty, `.` or `..` segments, no control characters,
/// at most 1024 bytes (S3's limit). The same rule for every store, so a key valid on one is valid on all.
public enum ObjectKey {
    public static func validate(_ key: String) throws(StorageError) {
        guard !key.isEmpty, key.utf8.count <= 1024 else {
            throw StorageError(.invalidKey, "An object key must be 1 to 1024 bytes long.")
        }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }) else {
            throw StorageError(.invalidKey, "An object key cannot contain control characters or backslashes.")
        }
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty, segment != ".", segment != ".." else {
                throw StorageError(.invalidKey, "An object key cannot start with '/', contain '//', or use '.' or '..' segments.")
            }
        }
    }
}
