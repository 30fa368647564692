import Dispatch
import Foundation
import Synchronization

/// The threads `.heavy` suites run on: as many as the machine has cores, apart from Swift's shared
/// pool (which has as many again). A heavy suite's synchronous test (an encoder, the beat tracker, a
/// wait for a process) holds one of these while it runs and no thread of the shared pool, so what
/// keeps time there (a job-store call and its deadline, which run as tasks of their own, a
/// server's answers, MachineGate's turns) is never starved by them. A stop's run once saw a
/// migration time out after five minutes while two such tests held both of the shared pool's threads.
///
/// Heavy suites still run two tests at a time on a two-core machine, as they did on the shared pool.
/// Tasks a heavy test starts with `Task {}` or `Task.detached` run on the shared pool; its child
/// tasks and everything it awaits run here.
public final class HeavyThreads: TaskExecutor, @unchecked Sendable {
    public static let shared = HeavyThreads(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private let jobs = Mutex<[UnownedJob]>([])
    private static let members = Mutex<Set<UInt>>([])
    private let available = DispatchSemaphore(value: 0)

    private init(count: Int) {
        for _ in 0..<count {
            let thread = Thread { [self] in
                Self.members.withLock { _ = $0.insert(UInt(pthread_self())) }
                while true {
                    available.wait()
                    let job = jobs.withLock { $0.removeFirst() }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// Whether the calling code runs on one of these threads.
    public static var isCurrent: Bool { members.withLock { $0.contains(UInt(pthread_self())) } }
}
