import Foundation
import MomentsModel
import ServiceTestSupport
import Synchronization
import Testing
@testable import Highlights

@Suite("Progress and cancellation", .alone)
struct EngineTests {
    @Test("progress only moves forward, through every stage, to 100 %")
    func progress() throws {
        let source = try Fixtures.path("event.mp4", Fixtures.event)
        let output = Fixtures.scratch().appendingPathComponent("progress.mp4").path
        let updates = Mutex<[(ProgressUpdate, ContinuousClock.Instant)]>([])
        _ = try HighlightEngine().highlight(input: source, output: output, settings: HighlightSettings(duration: 10, quality: .low)) { update in
            updates.withLock { $0.append((update, .now)) }
        }
        let seen = updates.withLock { $0 }
        #expect(seen.count > 5)
        for (a, b) in zip(seen, seen.dropFirst()) { #expect(a.0.fraction <= b.0.fraction) }
        #expect(seen.last?.0.fraction == 1)
        let stages = seen.map(\.0.stage)
        #expect(Stage.allCases.allSatisfy { stages.contains($0) })
        #expect(stages == stages.sorted { Stage.allCases.firstIndex(of: $0)! < Stage.allCases.firstIndex(of: $1)! })
        // Reports come at least every 250 ms of work (a debug build on a busy machine gets slack).
        let gaps = zip(seen, seen.dropFirst()).map { $1.1 - $0.1 }
        #expect(gaps.allSatisfy { $0 < .seconds(1) }, "longest gap \(gaps.max() ?? .zero)")
    }

    @Test("cancelling stops within a second and leaves no output", arguments: [Stage.analyzing, .rendering])
    func cancel(during stage: Stage) throws {
        let source = try Fixtures.path("event.mp4", Fixtures.event)
        let folder = Fixtures.scratch()
        let output = folder.appendingPathComponent("cancelled.mp4").path
        let flag = CancellationFlag()
        let cancelledAt = Mutex<ContinuousClock.Instant?>(nil)
        do {
            _ = try HighlightEngine().highlight(input: source, output: output, settings: HighlightSettings(duration: 10, quality: .low),
                                                cancellation: flag) { update in
                if update.stage == stage && !flag.isCancelled {
                    cancelledAt.withLock { $0 = .now }
                    flag.cancel()
                }
            }
            Issue.record("the highlight finished although it was cancelled")
        } catch {
            #expect(error.code == .cancelled)
        }
        let elapsed = try #require(cancelledAt.withLock { $0 }).duration(to: .now)
        #expect(elapsed < .seconds(1))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
