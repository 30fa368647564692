import Foundation
import MediaSynth
import ServiceTestSupport
import Testing
@testable import Highlights

@Suite("Segment selection", .heavy)
struct SelectionTests {
    static let target = 10.0

    func analysis() throws -> Analysis {
        try HighlightEngine().analyze(input: Fixtures.path("event.mp4", Fixtures.event))
    }

    @Test("the planted event is inside the selected segments")
    func eventIsSelected() throws {
        let analysis = try analysis()
        let selection = SegmentSelector.select(from: analysis, target: Self.target)
        let event = try #require(Fixtures.event.eventTimes.first)
        let covered = selection.segments.reduce(0.0) { total, s in
            total + max(0, min(s.end, event.upperBound) - max(s.start, event.lowerBound))
        }
        // The event lasts 2.5 s; the scene change at 25 s lies at its start, so it is all in one shot.
        #expect(covered >= 1.5, "segments \(selection.segments.map { ($0.start, $0.end) }) cover \(covered) s of the event")
        let peak = try #require(analysis.seconds.max { $0.score < $1.score })
        #expect(event.contains(peak.time + 0.5), "the best second is \(peak.time), the event is \(event)")
    }

    @Test("length on target, chronological, no overlaps, sensible edges")
    func segmentShape() throws {
        let analysis = try analysis()
        let selection = SegmentSelector.select(from: analysis, target: Self.target)
        let segments = selection.segments
        #expect(abs(selection.total - Self.target) <= 0.5, "total \(selection.total)")
        #expect(segments.count >= 2)
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.end <= b.start, "\(a) overlaps \(b)") }
        let frame = 1.0 / 30
        for segment in segments {
            #expect(segment.duration >= SegmentSelector.minimumLength - 1e-6)
            #expect(segment.duration <= SegmentSelector.maximumLength + frame)
            // Every edge is on a cut or at least half a second from one (never a few frames short of it).
            for edge in [segment.start, segment.end] {
                for change in analysis.changes {
                    let d = abs(edge - change.time)
                    #expect(d <= frame + 1e-6 || d >= 0.5 - frame, "edge \(edge) is \(d) s from the change at \(change.time)")
                }
            }
            // Edges sit on frames.
            #expect(analysis.frameTimes.contains { abs($0 - segment.start) < 1e-6 })
            #expect(!segment.reasons.isEmpty)
        }
    }

    @Test("covers the timeline and avoids near-duplicates")
    func diversity() throws {
        let analysis = try analysis()
        let segments = SegmentSelector.select(from: analysis, target: Self.target).segments
        let duration = analysis.info.duration
        // Three thirds of the timeline each contribute.
        for third in 0..<3 {
            let range = (Double(third) * duration / 3)...(Double(third + 1) * duration / 3)
            #expect(segments.contains { range.contains(($0.start + $0.end) / 2) }, "nothing from \(range)")
        }
    }

    @Test("deterministic: the same input gives the same segments")
    func deterministic() throws {
        let first = SegmentSelector.select(from: try analysis(), target: Self.target).segments
        let second = SegmentSelector.select(from: try analysis(), target: Self.target).segments
        #expect(first == second)
    }

    @Test("a source shorter than the target gives its usable parts")
    func shortSource() throws {
        let path = try Fixtures.path("h264-gop30.mp4", Fixtures.scenes())
        let analysis = try HighlightEngine().analyze(input: path)
        let selection = SegmentSelector.select(from: analysis, target: 30)
        // 20 s of footage; only the transitions (dissolve, and the dark frames of the fade) are left out.
        #expect(selection.total > 17 && selection.total <= analysis.info.duration + 1e-6, "total \(selection.total)")
        for (a, b) in zip(selection.segments, selection.segments.dropFirst()) { #expect(a.end <= b.start) }
    }
}
