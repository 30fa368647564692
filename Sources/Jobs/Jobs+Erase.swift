import Foundation
import JobStore
import MomentsModel
import Storage

/// Erasing at the owner's request (API 1.2): a job's files, or a device and everything of it.
extension Jobs {
    /// Erases job `id`'s files (source, highlight, poster, thumbnails, an uploaded track) and what
    /// its row says of the video (file name, metadata, segments), keeping the row as erased, and
    /// records it in the audit log as `actor`'s. A job that has not ended is cancelled first. Asked
    /// again, it does the same and deletes whatever is left; when storage fails part-way it throws
    /// after the mark, so the files are no longer served and asking again (or the retention sweep,
    /// where one runs) finishes. Nil when there is no such job.
    public func erase(_ id: UUID, storage: any ObjectStore, actor: String) async throws -> JobRecord? {
        if case .notFound = try await cancel(id, detail: "cancelled: erased by its owner") { return nil }
        guard let marked = try await store.markErased(id) else { return nil }
        let keys = marked.storedObjectKeys
        for key in keys { try await storage.delete(key: key) }
        try await store.markObjectsExpired(id)
        try await store.recordOperation(
            actor: actor, action: .erase, job: id,
            message: keys.isEmpty
                ? "Erased at its owner's request; its files were already gone." : "Erased at its owner's request: \(keys.count) files deleted.")
        return try await store.job(id) ?? marked
    }

    /// Erases everything of `device`: revokes its token first (so nothing new arrives), then
    /// erases each of its jobs, and records it in the audit log. Asked again (with the same,
    /// now revoked, token), it finishes what storage cut short. Answers when the device erased
    /// itself and how many jobs this call erased.
    public func erase(device: Device, storage: any ObjectStore) async throws -> (erasedAt: Date, jobs: Int) {
        guard let erasedAt = try await store.markDeviceErased(device.id) else {
            throw JobStoreError(.notFound, "The device is not known.")
        }
        let actor = "device:\(device.owner)"
        try await store.removePushToken(device: device.id)
        var erased = 0
        for id in try await store.jobsToErase(owner: device.owner) {
            if try await erase(id, storage: storage, actor: actor) != nil { erased += 1 }
        }
        try await store.recordOperation(
            actor: actor, action: .eraseDevice, message: "The device erased itself: its token is revoked and \(erased) jobs were erased.")
        return (erasedAt, erased)
    }
}
