import Dispatch
import Media
import Storage
import Synchronization

/// An object in storage as FFmpeg input, read by ranges: how the API probes a direct upload
/// without bringing the file here. Blocks of `blockSize` are fetched as the demuxer asks and the
/// last few kept; past `budget` bytes fetched the read fails, so no file makes the probe read
/// more than that. Blocks the calling thread: use it from a thread of its own, never a task.
final class StoredObjectInput: RandomAccessInput, @unchecked Sendable {
    let storage: any ObjectStore
    let key: String
    let size: Int64
    let blockSize: Int
    let budget: Int64
    /// Why the last read failed, when storage failed it.
    private(set) var failure: StorageError?
    private(set) var fetched: Int64 = 0
    private var blocks: [(index: Int64, bytes: [UInt8])] = []
    private static let keptBlocks = 8

    init(storage: any ObjectStore, key: String, size: Int64, blockSize: Int = 256 * 1024, budget: Int64 = 64 << 20) {
        self.storage = storage
        self.key = key
        self.size = size
        self.blockSize = blockSize
        self.budget = budget
    }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let index = offset / Int64(blockSize)
        let bytes = try block(index)
        let start = Int(offset - index * Int64(blockSize))
        let count = min(buffer.count, bytes.count - start)
        guard count > 0 else { throw StorageError(.unavailable, "The stored object \(key) is shorter than its stated size.") }
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)])) }
        return count
    }

    private func block(_ index: Int64) throws(StorageError) -> [UInt8] {
        if let kept = blocks.firstIndex(where: { $0.index == index }) {
            let block = blocks.remove(at: kept)
            blocks.append(block)
            return block.bytes
        }
        let offset = index * Int64(blockSize)
        let length = Int(min(Int64(blockSize), size - offset))
        guard fetched + Int64(length) <= budget else {
            let error = StorageError(.tooLarge, "Reading the file's header took more than \(budget >> 20) MiB.")
            failure = error
            throw error
        }
        fetched += Int64(length)
        let storage = storage, key = key
        do {
            let bytes = try Self.wait { () async throws(StorageError) in try await storage.read(key: key, offset: offset, length: length) }
            blocks.append((index, bytes))
            if blocks.count > Self.keptBlocks { blocks.removeFirst() }
            return bytes
        } catch {
            failure = error
            throw error
        }
    }

    /// Runs `work` as a task and blocks this (non-task) thread until it ends.
    private static func wait<T: Sendable>(_ work: @escaping @Sendable () async throws(StorageError) -> T) throws(StorageError) -> T {
        let outcome = Mutex<Result<T, StorageError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, StorageError>
            do throws(StorageError) { result = .success(try await work()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }
}
