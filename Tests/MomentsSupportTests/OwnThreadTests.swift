import Dispatch
import MomentsModel
import MomentsSupport
import Synchronization
import Testing

/// Threads the engine waits for: one the system refuses is an error at once (under the engine's
/// memory limit a refused thread was a hang), and a serial thread runs its work in order.
@Suite("Own threads")
struct OwnThreadTests {
    @Test("A thread whose stack cannot be mapped is refused with out_of_memory, and its work is never run")
    func refusedThread() {
        let ran = Atomic(false)
        // 1 PiB of stack: more than any address space allows.
        var refusal: MomentsError?
        do {
            try OwnThread.start(name: "too-big", stackSize: 1 << 50) { ran.store(true, ordering: .relaxed) }
        } catch {
            refusal = error
        }
        #expect(refusal?.code == .outOfMemory, "\(String(describing: refusal))")
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    @Test("A started thread runs its work, on a small stack or a large one", arguments: [64 << 10, 4 << 20])
    func runs(stackSize: Int) throws {
        let done = DispatchSemaphore(value: 0)
        let sum = Atomic(0)
        try OwnThread.start(name: "sums", stackSize: stackSize) {
            // Half the stack in use at once.
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackSize / 2) { buffer in
                buffer.initialize(repeating: 1)
                sum.store(buffer.reduce(0) { $0 + Int($1) }, ordering: .relaxed)
            }
            done.signal()
        }
        done.wait()
        let total = sum.load(ordering: .relaxed)
        #expect(total == stackSize / 2)
    }

    @Test("A serial thread runs 500 jobs given from 4 threads one at a time, each queue's in its order, and all of them before it ends")
    func serialOrder() throws {
        let seen = Mutex<[Int: [Int]]>([:])
        let running = Atomic(0), overlapped = Atomic(false)
        let finished = DispatchSemaphore(value: 0)
        do {
            let thread = try SerialThread(name: "serial")
            DispatchQueue.concurrentPerform(iterations: 4) { giver in
                for index in 0..<125 {
                    thread.async {
                        if running.add(1, ordering: .relaxed).newValue > 1 { overlapped.store(true, ordering: .relaxed) }
                        seen.withLock { $0[giver, default: []].append(index) }
                        running.subtract(1, ordering: .relaxed)
                    }
                }
            }
            thread.async { finished.signal() }
        }
        // The SerialThread is gone here; its thread still runs what it was given.
        finished.wait()
        let didOverlap = overlapped.load(ordering: .relaxed)
        #expect(!didOverlap)
        let all = seen.withLock { $0 }
        #expect(all.count == 4 && all.values.allSatisfy { $0 == Array(0..<125) })
    }
}
