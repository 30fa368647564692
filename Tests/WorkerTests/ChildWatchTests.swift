import Foundation
import Highlights
import MomentsModel
import Subprocess
import Testing

@testable import Worker

/// What the worker makes of an engine process from what it said and how it ended, without one.
@Suite("Engine process watch")
struct ChildWatchTests {
    static let megabyte = 1 << 20

    /// A watch whose child started at 400 MB with 64 MB allowed and peaked at `peak` MB.
    static func watch(peak: Int) -> ChildWatch {
        let watch = ChildWatch()
        watch.noteStarted()
        watch.noteLimit(start: 400 * megabyte, limit: 464 * megabyte)
        watch.notePeak(peak * megabyte)
        return watch
    }

    @Test("Silent near its limit is stuck: reported once, and its SIGKILL is out_of_memory saying it was silent")
    func silentNearTheLimit() throws {
        // 75 % of the 64 MB is 48 MB: 448 MB is near, 447 not.
        let near = Self.watch(peak: 448)
        #expect(near.silentAtLimit(for: .zero))
        #expect(!near.silentAtLimit(for: .zero), "only once")
        #expect {
            try near.outcome(.signaled(SIGKILL))
        } throws: { error in
            guard let failure = error as? EngineFailure else { return false }
            return failure.code == .outOfMemory && failure.diagnostics.contains("silent for") && failure.diagnostics.contains("SIGKILL")
        }
        #expect(!Self.watch(peak: 447).silentAtLimit(for: .zero))
    }

    @Test("Heard from lately, or already finished, is not stuck however near its limit")
    func heardOrFinished() {
        let heard = Self.watch(peak: 460)
        heard.noteHeard()
        #expect(!heard.silentAtLimit(for: .seconds(3600)))
        let finished = Self.watch(peak: 460)
        finished.noteLast(.failed(code: .outOfMemory, message: "no"))
        #expect(!finished.silentAtLimit(for: .zero))
    }

    @Test("Without a limit nothing is near it; a signal is a crash")
    func noLimit() {
        let watch = ChildWatch()
        watch.noteStarted()
        watch.notePeak(4000 * Self.megabyte)
        #expect(!watch.silentAtLimit(for: .zero))
        #expect {
            try watch.outcome(.signaled(SIGSEGV))
        } throws: { error in
            (error as? EngineFailure)?.code == .engineCrashed
        }
    }
}
