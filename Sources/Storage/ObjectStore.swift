import Foundation
import MomentsModel

/// Where sources and highlights live: S3-compatible storage or a local folder.
/// Objects move to and from files, never whole through memory.
public protocol ObjectStore: Sendable {
    /// Stores the file at `file` under `key`, replacing any object there (readers see old or new, never half).
    @discardableResult
    func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo
    /// Writes the object to `file` (created or replaced). An object longer than `limit` bytes
    /// fails with `tooLarge` as soon as the bytes show it, and leaves no file.
    @discardableResult
    func get(key: String, to file: URL, limit: Int64?) async throws(StorageError) -> ObjectInfo
    /// `length` bytes of the object from `offset` (fewer at its end): a window into a big object.
    func read(key: String, offset: Int64, length: Int) async throws(StorageError) -> [UInt8]
    /// Copies the object `source` to `key` inside the store (no bytes through this machine).
    @discardableResult
    func copy(from source: String, to key: String) async throws(StorageError) -> ObjectInfo
    /// The object's size and type; throws `notFound` if there is none.
    func head(key: String) async throws(StorageError) -> ObjectInfo
    /// Removes the object; removing one that is not there succeeds.
    func delete(key: String) async throws(StorageError)
    /// Up to `limit` objects whose keys start with `prefix`, in key order, after the key `after`
    /// (nil: from the first). An empty page is the end.
    func list(prefix: String, after: String?, limit: Int) async throws(StorageError) -> [StoredObject]
    /// The store's URL signer, when it can hand out URLs for direct transfers (S3 can; a folder cannot).
    var presigning: (any PresigningObjectStore)? { get }
    /// The store's resumable uploads, when clients can upload parts to it directly (S3 can).
    var resumable: (any ResumableObjectStore)? { get }
}

extension ObjectStore {
    public var presigning: (any PresigningObjectStore)? { nil }
    public var resumable: (any ResumableObjectStore)? { nil }

    /// Writes the object to `file` (created or replaced), whatever its length.
    @discardableResult
    public func get(key: String, to file: URL) async throws(StorageError) -> ObjectInfo {
        try await get(key: key, to: file, limit: nil)
    }
}

/// An object store that signs short-lived URLs a client uses to GET or PUT an object directly.
public protocol PresigningObjectStore: ObjectStore {
    /// A URL for `method` (GET or PUT) on `key`, valid for `expires`. With `contentLength`, the
    /// store accepts a PUT only of exactly that many bytes (the length is part of the signature).
    func signedURL(for key: String, method: String, expires: Duration, contentLength: Int64?) throws(StorageError) -> URL
}

/// An object store whose multipart uploads a client can drive itself, part by part, over URLs
/// the server signs (resumable uploads: S3, R2).
public protocol ResumableObjectStore: PresigningObjectStore {
    /// Starts a multipart upload of `key`; returns its id.
    func startUpload(key: String, contentType: String) async throws(StorageError) -> String
    /// A PUT URL for part `part` (1-based) of the upload, accepting exactly `contentLength` bytes.
    func signedPartURL(key: String, uploadID: String, part: Int, expires: Duration, contentLength: Int64) throws(StorageError) -> URL
    /// The parts that have arrived, by number; `notFound` when the upload is gone.
    func uploadedParts(key: String, uploadID: String) async throws(StorageError) -> [UploadedPart]
    /// Assembles `parts` (all of them, in order) into the object.
    func completeUpload(key: String, uploadID: String, parts: [UploadedPart]) async throws(StorageError)
    /// Aborts the upload, freeing its parts.
    func abortUpload(key: String, uploadID: String) async throws(StorageError)
    /// One page (at most `limit`) of the uploads under `prefix` neither completed nor aborted,
    /// after `marker` (the page before's `next`); `next` is nil after the last page.
    func unfinishedUploads(
        prefix: String, after marker: UploadListMarker?,
        limit: Int
    ) async throws(StorageError) -> (uploads: [UnfinishedUpload], next: UploadListMarker?)
}

extension ResumableObjectStore {
    /// Every upload under `prefix` neither completed nor aborted, page after page.
    public func unfinishedUploads(prefix: String) async throws(StorageError) -> [UnfinishedUpload] {
        var all: [UnfinishedUpload] = []
        var marker: UploadListMarker?
        repeat {
            let page = try await unfinishedUploads(prefix: prefix, after: marker, limit: 1000)
            all += page.uploads
            marker = page.next
        } while marker != nil
        return all
    }
}

/// Where a listing of unfinished uploads goes on, as the server said: S3 names the key and the
/// upload id to go on after; SeaweedFS only the upload id (its listing is ordered by upload id,
/// and it reads a key marker as "only this key").
public struct UploadListMarker: Sendable, Equatable {
    public var key: String?
    public var uploadID: String?
}

/// A part of a multipart upload that storage holds.
public struct UploadedPart: Sendable, Equatable, Codable {
    public var number: Int
    public var size: Int64
    public var etag: String

    public init(number: Int, size: Int64, etag: String) {
        self.number = number
        self.size = size
        self.etag = etag
    }
}

/// A multipart upload storage still holds parts of.
public struct UnfinishedUpload: Sendable, Equatable {
    public var key: String
    public var uploadID: String
    public var initiated: Date?
}

extension PresigningObjectStore {
    public func signedURL(for key: String, method: String, expires: Duration) throws(StorageError) -> URL {
        try signedURL(for: key, method: method, expires: expires, contentLength: nil)
    }
}

/// One object of a listing.
public struct StoredObject: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var lastModified: Date

    public init(key: String, size: Int64, lastModified: Date) {
        self.key = key
        self.size = size
        self.lastModified = lastModified
    }
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
    /// The object is longer than the reader allowed.
    case tooLarge = "too_large"
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
