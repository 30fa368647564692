import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Synchronization
import Testing

@testable import Highlights

@Suite("Progress and cancellation", .alone)
struct EngineTests {
    @Test(
        "progress only moves forward, through every stage, to 100 % (also when a crop is planned before the render)",
        arguments: [AspectRatio.source, .portrait])
    func progress(aspect: AspectRatio) throws {
        let source = try Fixtures.path("event.mp4", Fixtures.event)
        let output = Fixtures.scratch().appendingPathComponent("progress.mp4").path
        let updates = Mutex<[(ProgressUpdate, ContinuousClock.Instant)]>([])
        let settings = HighlightSettings(duration: 10, quality: .low, choices: HighlightChoices(aspect: aspect))
        _ = try HighlightEngine().highlight(input: source, output: output, settings: settings) { update in
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
            _ = try HighlightEngine().highlight(
                input: source, output: output, settings: HighlightSettings(duration: 10, quality: .low),
                cancellation: flag
            ) { update in
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

    /// 12 s of 1920×1080 with one keyframe at the start: a segment at 11 s needs 11 s of pictures
    /// decoded that are never shown (the pre-roll). Coded at `veryfast` (CABAC and the loop
    /// filter), so the pre-roll takes about 0.3 s to decode on this project's machine: at 720p
    /// `ultrafast` it took 0.08–0.1 s, too close to the 0.1 s the test needs to tell anything.
    static let oneKeyframe: SyntheticVideo = {
        var video = SyntheticVideo(
            width: 1920, height: 1080, frameRate: 30,
            scenes: [
                .init(frames: 180, camera: .pan(pixelsPerFrame: 3), toneHz: 220),
                .init(frames: 180, camera: .shaky(amplitude: 4), transitionIn: .cut, toneHz: 330),
            ])
        video.gopSize = 360
        video.audio = nil
        video.encoderOptions = SyntheticVideo.phoneX264Options
        return video
    }()

    @Test("cancelling during a segment's pre-roll stops the render's reader before it decodes the pre-roll")
    func cancelDuringPreRoll() throws {
        let source = try Fixtures.path("one-keyframe.mp4", Self.oneKeyframe)
        let analysis = try HighlightEngine().analyze(input: source)
        let late = Segment(start: 11, end: 12, score: 1, reasons: [], shot: 1)
        /// Runs the reader over the late segment; the time until its first picture (nil: none came) and how it ended.
        func read(cancelled: Bool) throws -> (firstPicture: Duration?, elapsed: Duration, error: (any Error)?) {
            let (input, info, video, _) = try MediaProbe.open(source, limits: MediaLimits())
            let flag = CancellationFlag()
            if cancelled { flag.cancel() }
            let reader = try SegmentReader(
                input: input, video: video, audio: nil, analysis: analysis,
                geometry: OutputGeometry(info: info, quality: .low),
                frames: FrameRatePlan(sourceRate: info.frameRate, choice: .source), cancellation: flag)
            let queue = RenderQueue(capacity: 4)
            let ended = Mutex<(any Error)?>(nil)
            let done = DispatchSemaphore(value: 0)
            let started = ContinuousClock.now
            Thread {
                do { try reader.read([late], into: queue) } catch { ended.withLock { $0 = error } }
                queue.fail(ended.withLock { $0 } ?? MomentsError(.internalError, "the reader ended"))
                done.signal()
            }.start()
            var firstPicture: Duration?
            while firstPicture == nil, let item = try? queue.take() {
                if case .video = item { firstPicture = started.duration(to: .now) }
            }
            queue.close()
            done.wait()
            return (firstPicture, started.duration(to: .now), ended.withLock { $0 })
        }
        let full = try read(cancelled: false)
        let preRoll = try #require(full.firstPicture, "the uncancelled reader delivers the segment's first picture")
        #expect(preRoll > .milliseconds(100), "the fixture's pre-roll takes time to decode: \(preRoll)")
        let stopped = try read(cancelled: true)
        #expect(stopped.firstPicture == nil)
        #expect((stopped.error as? MomentsError)?.code == .cancelled, "\(String(describing: stopped.error))")
        #expect(stopped.elapsed < preRoll / 4, "stopped after \(stopped.elapsed), the pre-roll takes \(preRoll)")
    }
}
