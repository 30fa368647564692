import MomentsModel
import MomentsSupport
import TestSupport
import Testing

/// The one retry policy: waits double up to a cap, counted or timed, with or without jitter.
@Suite("Backoff", .quiet)
struct BackoffTests {
    struct Flaky: Error, Equatable { var retryable: Bool }

    @Test("Waits double from first and stop at cap; reset starts again")
    func advance() {
        var backoff = Backoff(first: .milliseconds(100), cap: .milliseconds(500))
        let waits = (0..<5).map { _ in backoff.advance() }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(500), .milliseconds(500)])
        backoff.reset()
        #expect(backoff.advance() == .milliseconds(100))
    }

    @Test("Counted attempts: first·2^(attempt−1) up to cap; jitter keeps each wait in [half, whole) of it")
    func counted() {
        #expect(Backoff.delay(afterAttempt: 1, first: .seconds(10), cap: .seconds(3600), jitter: false) == .seconds(10))
        #expect(Backoff.delay(afterAttempt: 4, first: .seconds(10), cap: .seconds(3600), jitter: false) == .seconds(80))
        #expect(Backoff.delay(afterAttempt: 30, first: .seconds(10), cap: .seconds(3600), jitter: false) == .seconds(3600))
        #expect(
            Backoff.delay(afterAttempt: 1_000, first: .seconds(10), cap: .seconds(3600), jitter: false) == .seconds(3600),
            "a huge attempt count neither overflows nor passes the cap")
        #expect(Backoff.delay(afterAttempt: 0, first: .seconds(2), cap: .seconds(60), jitter: false) == .seconds(2))
        let waits = (0..<500).map { _ in Backoff.delay(afterAttempt: 3, first: .milliseconds(200), cap: .seconds(5)) }
        #expect(waits.allSatisfy { $0 >= .milliseconds(400) && $0 < .milliseconds(800) })
        #expect(Set(waits).count > 100, "the jitter varies")
    }

    @Test("retrying: retryable errors are retried until success, with each wait reported")
    func retriesUntilSuccess() async throws {
        var tries = 0
        var heard: [Duration] = []
        // A window far longer than the waits: a loaded machine once took 9 s over these 7 ms of sleeping.
        let value = try await Backoff.retrying(
            for: .seconds(120), first: .milliseconds(1), cap: .milliseconds(4),
            when: { (error: Flaky) in error.retryable },
            onRetry: { _, wait in heard.append(wait) }
        ) { () throws(Flaky) -> Int in
            tries += 1
            if tries < 4 { throw Flaky(retryable: true) }
            return 42
        }
        #expect(value == 42 && tries == 4)
        #expect(heard == [.milliseconds(1), .milliseconds(2), .milliseconds(4)])
    }

    @Test("retrying: an error it may not retry is thrown at once; a closed window throws the last error")
    func givesUp() async {
        var tries = 0
        await #expect(throws: Flaky(retryable: false)) {
            try await Backoff.retrying(for: .seconds(5), when: { (error: Flaky) in error.retryable }) { () throws(Flaky) in
                tries += 1
                throw Flaky(retryable: false)
            }
        }
        #expect(tries == 1)
        tries = 0
        var waits: [Duration] = []
        await #expect(throws: Flaky(retryable: true)) {
            try await Backoff.retrying(
                for: .milliseconds(60), first: .milliseconds(10), cap: .milliseconds(10),
                when: { (error: Flaky) in error.retryable }, onRetry: { waits.append($1) }
            ) { () throws(Flaky) in
                tries += 1
                throw Flaky(retryable: true)
            }
        }
        // Every wait fits in the window, however slowly the machine ran (a loaded one tries less often).
        #expect(tries == waits.count + 1 && waits.count <= 5, "\(tries) tries in a 60 ms window of 10 ms waits")
        #expect(waits.reduce(.zero, +) < .milliseconds(60), "\(waits)")
    }
}
