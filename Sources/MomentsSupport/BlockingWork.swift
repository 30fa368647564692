import Dispatch

/// Work that holds its thread (hashing a big file, copying one, a burst of disk writes) runs on
/// threads of its own, never on Swift's cooperative pool: that pool has one thread per core, and
/// a request handler or a lease renewal waiting behind a 2 GiB hash is a stalled node.
public enum BlockingWork {
    private static let queue = DispatchQueue(label: "moments.blocking", qos: .utility, attributes: .concurrent)

    /// Runs `body` on a blocking-work thread and returns what it returns (or throws what it throws).
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}
