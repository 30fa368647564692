import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import Synchronization
import Testing

@testable import Highlights

@Suite("Reframing to another shape", .heavy)
struct ReframeTests {
    func info(_ width: Int, _ height: Int, rotation: Int = 0) throws -> MediaInfo {
        var info = try MediaProbe.probe(Fixtures.path("h264-gop30.mp4", Fixtures.scenes()))
        info.width = width
        info.height = height
        info.rotation = rotation
        info.sampleAspectRatio = 1
        return info
    }

    @Test("the window: the shape asked for once upright, even sides, sliding along the long side; none when the shape is already right")
    func windows() throws {
        let landscape = try info(1920, 1080)
        #expect(Reframer.window(for: landscape, aspect: .portrait)! == (606, 1080, true))
        #expect(Reframer.window(for: landscape, aspect: .square)! == (1080, 1080, true))
        #expect(Reframer.window(for: landscape, aspect: .feed)! == (864, 1080, true))
        #expect(Reframer.window(for: landscape, aspect: .landscape) == nil && Reframer.window(for: landscape, aspect: .source) == nil)
        // An iPhone portrait clip: stored 1920×1080, turned 90°. 16:9 keeps a band across it as shown.
        let portrait = try info(1920, 1080, rotation: 90)
        #expect(Reframer.window(for: portrait, aspect: .portrait) == nil)
        #expect(Reframer.window(for: portrait, aspect: .landscape)! == (606, 1080, true))
        #expect(Reframer.window(for: portrait, aspect: .square)! == (1080, 1080, true))
        let shown = CropPlan.display(x: 600, y: 0, width: 606, height: 1080, frameWidth: 1920, frameHeight: 1080, rotation: 90)
        #expect(shown == (0, 600, 1080, 606))
    }

    @Test("a subject at rest gets a window at rest, however noisy its reading")
    func lockedOff() {
        var random = SplitMix64(seed: 7)
        let raw: [Double?] = (0..<150).map { i in i % 17 == 0 ? nil : 0.4 + (Double(random.next() % 1000) / 1000 - 0.5) * 0.02 }
        let path = Reframer.steady(raw, times: (0..<150).map { Double($0) / 30 }, windowFraction: 0.3)
        #expect(Set(path).count == 1 && abs(path[0] - 0.4) < 0.01, "\(path.prefix(5))")
    }

    @Test("a steady move is followed without lag; a stray reading moves nothing")
    func followsWithoutLag() {
        var raw: [Double?] = (0..<240).map { 0.2 + 0.6 * Double($0) / 239 }
        raw[100] = 0.9
        raw[101] = nil
        let path = Reframer.steady(raw, times: (0..<240).map { Double($0) / 30 }, windowFraction: 0.316)
        for (i, centre) in path.enumerated() {
            let subject = 0.2 + 0.6 * Double(i) / 239
            let expected = min(max(subject, 0.158), 1 - 0.158)
            #expect(abs(centre - expected) < 0.01, "frame \(i): window centre \(centre), subject \(subject)")
        }
        let steps = zip(path, path.dropFirst()).map { abs($1 - $0) }
        #expect((steps.max() ?? 1) < 0.01, "no jumps: \(steps.max() ?? 0)")
    }

    @Test("planning the crop moves the progress with every picture it reads, through its part of the rendering stage")
    func planningProgress() throws {
        let input = try Fixtures.path("moving-subject.mp4", SyntheticVideo.movingSubject)
        let flag = CancellationFlag()
        let analysis = try Analyzer.run(path: input, limits: MediaLimits(), reporter: ProgressReporter(cancellation: flag) { _ in })
        let reframer = try #require(try Reframer(path: input, analysis: analysis, aspect: .portrait, cancellation: flag))
        let segments = [Segment(start: 1, end: 3, score: 1, reasons: [], shot: 0), Segment(start: 9, end: 11, score: 1, reasons: [], shot: 1)]
        let pictures = Int(segments.reduce(0) { $0 + $1.duration }) * SyntheticVideo.movingSubject.frameRate
        let updates = Mutex<[ProgressUpdate]>([])
        let reporter = ProgressReporter(interval: 0, cancellation: flag) { update in updates.withLock { $0.append(update) } }
        _ = try reporter.within(0...Reframer.progressShare) { try reframer.plan(segments, reporter: reporter) }
        let seen = updates.withLock { $0 }
        let (start, width) = Stage.rendering.span
        let end = start + width * Reframer.progressShare
        #expect(seen.allSatisfy { $0.stage == .rendering && $0.fraction >= start && $0.fraction <= end + 1e-9 })
        for (a, b) in zip(seen, seen.dropFirst()) { #expect(a.fraction <= b.fraction) }
        #expect(Set(seen.map(\.fraction)).count >= pictures, "the progress moved \(Set(seen.map(\.fraction)).count) times")
        #expect(seen.contains { abs($0.fraction - (start + end) / 2) < 1e-9 }, "half done after the first segment")
        #expect(abs((seen.last?.fraction ?? 0) - end) < 1e-9)
    }

    @Test("highlight --aspect 9:16: the report's crop path follows the subject, smoothly")
    func reportedPath() throws {
        let input = try Fixtures.path("moving-subject.mp4", SyntheticVideo.movingSubject)
        let output = Fixtures.scratch().appendingPathComponent("portrait.mp4").path
        var settings = HighlightSettings(duration: 10, quality: .low, choices: HighlightChoices(aspect: .portrait))
        settings.stills = nil
        let report = try HighlightEngine().highlight(input: input, output: output, settings: settings)
        let reframe = try #require(report.reframe)
        #expect(reframe.width == 202 && reframe.height == 360 && report.output.width == 202 && report.output.height == 360)
        #expect(report.render.mode == .encode)
        let scenes = SyntheticVideo.movingSubject.scenes
        for point in reframe.path {
            // Where the subject's centre is at that moment (scene 1: 0–8 s, scene 2: 8–14 s).
            let frame = Int((point.time * 30).rounded())
            let local = frame < scenes[0].frames ? frame : frame - scenes[0].frames
            let scene = frame < scenes[0].frames ? scenes[0] : scenes[1]
            let x = try #require(scene.subjectCentre(atLocalFrame: local)).x * 640
            #expect(
                x >= Double(point.x) + 202.0 / 3 - 2 && x <= Double(point.x) + 2 * 202.0 / 3 + 2,
                "at \(point.time) s the subject (\(x)) is outside the window's middle third (\(point.x)…)")
        }
    }
}
