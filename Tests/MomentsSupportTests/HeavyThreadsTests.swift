import Testing

@testable import TestSupport

/// Heavy suites run on threads of their own (MachineShare, HeavyThreads), so their synchronous tests
/// never hold the shared pool's threads.
@Suite("Heavy suites run on threads of their own", .heavy)
struct HeavyThreadsTests {
    @Test("an async test, its child tasks and what follows an await run on the heavy threads; a Task {} it starts does not")
    func asyncTest() async throws {
        #expect(HeavyThreads.isCurrent)
        async let child = HeavyThreads.isCurrent
        #expect(await child)
        try await Task.sleep(for: .milliseconds(5))
        #expect(HeavyThreads.isCurrent)
        #expect(await Task { HeavyThreads.isCurrent }.value == false)
    }

    @Test("a synchronous test runs on a heavy thread")
    func synchronousTest() {
        #expect(HeavyThreads.isCurrent)
    }
}

@Suite("Untagged suites run on the shared pool")
struct SharedPoolTests {
    @Test("an untagged test is not on a heavy thread")
    func untagged() async {
        #expect(!HeavyThreads.isCurrent)
    }
}
