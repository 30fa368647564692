import CurlHTTP
import Foundation
import ServiceTestSupport
import Testing

/// A transfer stops when its task is cancelled, instead of running to curl's own timeouts.
@Suite("Cancelling a transfer", .quiet)
struct CurlCancellationTests {
    /// A TCP port that accepts connections (the kernel's backlog) and never answers.
    static func silentPort() throws -> (Int32, Int) { try Loopback.listen() }

    @Test("A request to a server that never answers ends within seconds of its task's cancellation (not its 60 s stall limit), marked cancelled")
    func cancelStalledRequest() async throws {
        let (listener, port) = try Self.silentPort()
        defer { close(listener) }
        let request = CurlRequest(method: "GET", url: "http://127.0.0.1:\(port)/object", headers: [], stallTimeout: 60, connectTimeout: 5)
        let transfer = Task { await Curl.perform(request) }
        try await Task.sleep(for: .milliseconds(500))
        let cancelled = ContinuousClock.now
        transfer.cancel()
        let result = await transfer.value
        let took = ContinuousClock.now - cancelled
        guard case .failure(let failure) = result else {
            Issue.record("the stalled request answered: \(result)")
            return
        }
        #expect(failure.isCancelled, "\(failure.message)")
        // Curl's next progress call notices, about a second later when idle; a loaded machine has
        // taken 3.2 s.
        #expect(took < .seconds(6), "stopped \(took) after the cancellation")
    }

    @Test("A task cancelled before the transfer starts makes no request")
    func cancelledBeforeStart() async throws {
        let transfer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Curl.perform(CurlRequest(method: "GET", url: "http://127.0.0.1:9/never", headers: []))
        }
        guard case .failure(let failure) = await transfer.value else { Issue.record("a request was made"); return }
        #expect(failure.isCancelled)
    }
}
