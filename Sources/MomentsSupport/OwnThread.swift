import Dispatch
import MomentsModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread of its own for work that must not wait on a pool. Starting one throws when the system
/// refuses the thread (its stack does not fit in what the process may map, say), where Foundation's
/// `Thread` starts nothing and says nothing, and a Dispatch queue retries for ever: either way whoever
/// waits for the work waits for ever. Under the engine's memory limit that is a hang, where this is
/// an `out_of_memory` failure.
public enum OwnThread {
    /// Starts `body` on a new detached thread with a stack of `stackSize` bytes; `name` says what
    /// it is for in the error.
    public static func start(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) throws(MomentsError) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, &attributes,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        guard status == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw MomentsError(.outOfMemory, "The system refused a thread for \(name) (error \(status)): memory is short.")
        }
    }

    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}

/// Runs the work given to it in order on one thread of its own (an `OwnThread`), started when it is
/// made, so no later `async` can find itself without a thread. The thread ends once this is gone
/// and the work given before has run.
public final class SerialThread: Sendable {
    private let jobs = Jobs()

    public init(name: String, stackSize: Int = 1 << 20) throws(MomentsError) {
        let jobs = jobs
        try OwnThread.start(name: name, stackSize: stackSize) {
            while let job = jobs.next() { job() }
        }
    }

    deinit { jobs.close() }

    /// Runs `job` after the work given before it.
    public func async(_ job: @escaping @Sendable () -> Void) { jobs.add(job) }

    private final class Jobs: Sendable {
        private let state = Mutex<(waiting: [@Sendable () -> Void], closed: Bool)>(([], false))
        private let available = DispatchSemaphore(value: 0)

        func add(_ job: @escaping @Sendable () -> Void) {
            state.withLock { $0.waiting.append(job) }
            available.signal()
        }

        func close() {
            state.withLock { $0.closed = true }
            available.signal()
        }

        /// The next job, waiting for one; nil once closed and drained.
        func next() -> (@Sendable () -> Void)? {
            while true {
                let job: (@Sendable () -> Void)?? = state.withLock { state in
                    if !state.waiting.isEmpty { return state.waiting.removeFirst() }
                    return state.closed ? .some(nil) : nil
                }
                if let job { return job }
                available.wait()
            }
        }
    }
}
