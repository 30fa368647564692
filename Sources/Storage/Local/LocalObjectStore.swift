import Foundation
import MomentsModel
import MomentsSupport

/// Objects as files under one root folder, for single-machine installs.
///
/// Writes go to a hidden temporary file in the destination folder and are renamed into place, so
/// a reader sees the old object or the new one, never half of one. Keys are validated and the
/// resolved path is checked to lie inside the root, so no key can reach outside it.
public struct LocalObjectStore: ObjectStore {
    public let root: URL

    /// Creates the root folder if needed.
    public init(root: URL) throws(StorageError) {
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw StorageError(.ioError, "The storage folder \(root.path) could not be created.")
        }
        self.root = root.standardizedFileURL.resolvingSymlinksInPath()
    }

    func location(of key: String) throws(StorageError) -> URL {
        try ObjectKey.validate(key)
        let url = root.appendingPathComponent(key).standardizedFileURL
        guard url.path.hasPrefix(root.path + "/") else {
            throw StorageError(.invalidKey, "The object key leads outside the storage folder.")
        }
        // A symbolic link inside the root must not lead out of it either.
        let parent = url.deletingLastPathComponent().resolvingSymlinksInPath()
        guard parent.path == root.path || parent.path.hasPrefix(root.path + "/") else {
            throw StorageError(.invalidKey, "The object key leads outside the storage folder.")
        }
        return url
    }

    /// The file holding the object `key` (for serving it directly); `notFound` if there is none.
    public func fileURL(for key: String) throws(StorageError) -> URL {
        let url = try location(of: key)
        guard FileManager.default.fileExists(atPath: url.path) else { throw StorageError(.notFound, "There is no object \(key).") }
        return url
    }

    public func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo {
        let destination = try location(of: key)
        do {
            try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try await BlockingWork.run { try Self.copyAtomically(from: file, to: destination) }
        } catch {
            if !FileManager.default.fileExists(atPath: file.path) {
                throw StorageError(.ioError, "The file to store (\(file.lastPathComponent)) does not exist.")
            }
            throw StorageError(.ioError, "The object \(key) could not be written.")
        }
        return ObjectInfo(key: key, size: Self.size(of: destination), contentType: contentType)
    }

    public func get(key: String, to file: URL, limit: Int64?) async throws(StorageError) -> ObjectInfo {
        let source = try location(of: key)
        guard FileManager.default.fileExists(atPath: source.path) else { throw StorageError(.notFound, "There is no object \(key).") }
        if let limit, Self.size(of: source) > limit {
            throw StorageError(.tooLarge, "The object \(key) is longer than the \(limit) bytes expected.")
        }
        do {
            try await BlockingWork.run { try Self.copyAtomically(from: source, to: file) }
        } catch {
            throw StorageError(.ioError, "The object \(key) could not be copied to \(file.lastPathComponent).")
        }
        return ObjectInfo(key: key, size: Self.size(of: file))
    }

    public func read(key: String, offset: Int64, length: Int) async throws(StorageError) -> [UInt8] {
        let source = try location(of: key)
        guard let handle = FileHandle(forReadingAtPath: source.path) else { throw StorageError(.notFound, "There is no object \(key).") }
        defer { try? handle.close() }
        do {
            try handle.seek(toOffset: UInt64(max(offset, 0)))
            return [UInt8](try handle.read(upToCount: max(length, 0)) ?? Data())
        } catch {
            throw StorageError(.ioError, "The object \(key) could not be read.")
        }
    }

    public func copy(from source: String, to key: String) async throws(StorageError) -> ObjectInfo {
        let origin = try location(of: source)
        guard FileManager.default.fileExists(atPath: origin.path) else { throw StorageError(.notFound, "There is no object \(source).") }
        return try await put(key: key, from: origin, contentType: "application/octet-stream")
    }

    public func list(prefix: String, after: String?, limit: Int) async throws(StorageError) -> [StoredObject] {
        let root = root
        // Only the folder the prefix names is walked.
        let folder = prefix.contains("/") ? root.appendingPathComponent(String(prefix[..<prefix.lastIndex(of: "/")!])) : root
        return await BlockingWork.run { () -> [StoredObject] in
            guard
                let walker = FileManager.default.enumerator(
                    at: folder,
                    includingPropertiesForKeys: [
                        .isRegularFileKey, .fileSizeKey,
                        .contentModificationDateKey,
                    ])
            else { return [] }
            var found: [StoredObject] = []
            for case let url as URL in walker {
                let key = String(url.standardizedFileURL.path.dropFirst(root.path.count + 1))
                guard key.hasPrefix(prefix), after.map({ key > $0 }) ?? true, !url.lastPathComponent.hasPrefix("."),
                    let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey]),
                    values.isRegularFile == true
                else { continue }
                found.append(StoredObject(key: key, size: Int64(values.fileSize ?? 0), lastModified: values.contentModificationDate ?? Date()))
            }
            return Array(found.sorted { $0.key < $1.key }.prefix(limit))
        }
    }

    public func head(key: String) async throws(StorageError) -> ObjectInfo {
        let source = try location(of: key)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw StorageError(.notFound, "There is no object \(key).")
        }
        return ObjectInfo(key: key, size: Self.size(of: source))
    }

    public func delete(key: String) async throws(StorageError) {
        let target = try location(of: key)
        guard FileManager.default.fileExists(atPath: target.path) else { return }
        do {
            try FileManager.default.removeItem(at: target)
        } catch {
            throw StorageError(.ioError, "The object \(key) could not be deleted.")
        }
    }

    /// Copies to a hidden file beside `destination` and renames it into place; removes it on failure.
    static func copyAtomically(from source: URL, to destination: URL) throws {
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        do {
            try FileManager.default.copyItem(at: source, to: temporary)
            if rename(temporary.path, destination.path) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    static func size(of url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
