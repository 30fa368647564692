import Foundation
import Testing

@testable import API

/// Event streams are bounded per owner and per node, and a closed stream gives its place back.
@Suite("Event stream limits")
struct JobEventsHubTests {
    @Test("An owner gets at most perOwner streams, the node at most total; closing one frees its place")
    func limits() async throws {
        let hub = JobEventsHub(perOwner: 3, total: 5)
        let job = UUID()
        var open: [UUID] = []
        for _ in 0..<3 { open.append(try #require(await hub.watch(job, owner: "a")).token) }
        #expect(await hub.watch(job, owner: "a") == nil, "a fourth stream for the same owner")
        #expect(await hub.watch(UUID(), owner: "b") != nil)
        #expect(await hub.watch(UUID(), owner: "c") != nil)
        #expect(await hub.watch(UUID(), owner: "d") == nil, "the node's total is reached")
        await hub.stopWatching(job, token: open.removeFirst())
        #expect(await hub.openStreams == 4)
        #expect(await hub.watch(job, owner: "a") != nil, "a closed stream gave its place back")
        #expect(await hub.openStreams == 5)
    }
}
