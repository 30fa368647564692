import Foundation
import MediaSynth
import MediaTestSupport
import MomentsModel
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

    @Test("no shot is shown twice: segments of one shot stay a moment apart", arguments: [10.0, 15.0, 20.0, 25.0])
    func noMomentTwice(target: Double) throws {
        let analysis = try analysis()
        let segments = SegmentSelector.select(from: analysis, target: target).segments
        func shot(_ s: Segment) -> Int? { analysis.shots.firstIndex { $0.start <= (s.start + s.end) / 2 && (s.start + s.end) / 2 < $0.end } }
        for (a, b) in zip(segments, segments.dropFirst()) where shot(a) == shot(b) {
            // A frame's rounding allowed.
            #expect(
                b.start - a.end >= SegmentSelector.momentApart - 1.0 / 30 - 1e-6,
                "target \(target): \(a.start)–\(a.end) and \(b.start)–\(b.end) show one shot a moment apart")
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

    // MARK: The user's segment choices

    @Test("min_segment and max_segment bound every segment; the total stays on target")
    func segmentLengthBounds() throws {
        let analysis = try analysis()
        let rules = SegmentRules(HighlightChoices(minSegment: 3, maxSegment: 4), target: Self.target)
        let selection = SegmentSelector.select(from: analysis, target: Self.target, rules: rules)
        let frame = 1.0 / 30
        #expect(abs(selection.total - Self.target) <= 0.5, "total \(selection.total)")
        for segment in selection.segments {
            #expect(segment.duration >= 3 - frame && segment.duration <= 4 + frame, "\(segment.start)–\(segment.end)")
        }
        // Unchosen, the engine makes segments outside those bounds here: the choice changed something.
        let own = SegmentSelector.select(from: analysis, target: Self.target).segments
        #expect(own.contains { $0.duration < 3 - frame || $0.duration > 4 + frame }, "\(own.map(\.duration))")
    }

    @Test("max_segments caps the count; the segments grow so the total stays on target")
    func segmentCount() throws {
        let analysis = try analysis()
        let rules = SegmentRules(HighlightChoices(maxSegments: 2), target: Self.target)
        let selection = SegmentSelector.select(from: analysis, target: Self.target, rules: rules)
        #expect(selection.segments.count <= 2 && !selection.segments.isEmpty)
        #expect(abs(selection.total - Self.target) <= 0.5, "total \(selection.total)")
        #expect(SegmentSelector.select(from: analysis, target: Self.target).segments.count > 2)
    }

    @Test("a short source is cut to the chosen lengths instead of shown whole")
    func shortSourceWithChoices() throws {
        let path = try Fixtures.path("h264-gop30.mp4", Fixtures.scenes())
        let analysis = try HighlightEngine().analyze(input: path)
        let rules = SegmentRules(HighlightChoices(maxSegment: 3), target: 30)
        let selection = SegmentSelector.select(from: analysis, target: 30, rules: rules)
        #expect(selection.segments.count >= 3)
        for segment in selection.segments { #expect(segment.duration <= 3 + 1.0 / 30, "\(segment.start)–\(segment.end)") }
        for (a, b) in zip(selection.segments, selection.segments.dropFirst()) { #expect(a.end <= b.start) }
    }

    /// `Fixtures.clip`: two 1.5 s shots (a cut at 45 of 90 frames, 30 fps).
    @Test(
        "min_segment longer than every shot, or than the whole video: one stretch across the cut, never nothing",
        arguments: [2.5, 5])
    func minimumBeyondTheShots(minimum: Double) throws {
        let path = try Fixtures.path("h264-aac.mp4", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4"))
        let analysis = try HighlightEngine().analyze(input: path)
        #expect(analysis.shots.allSatisfy { $0.duration < minimum }, "\(analysis.shots)")
        let rules = SegmentRules(HighlightChoices(minSegment: minimum), target: 10)
        let segments = SegmentSelector.select(from: analysis, target: 10, rules: rules).segments
        try #require(segments.count == 1, "\(segments)")
        // At least `minimum`, or the whole video where it is shorter.
        let duration = analysis.info.duration
        #expect(
            segments[0].duration >= min(minimum, duration) - 1.0 / 30 - 1e-6 && segments[0].duration <= duration + 1e-6,
            "\(segments[0].start)–\(segments[0].end)")
    }

    /// `Fixtures.event`: eight 5 s shots.
    @Test("max_segments whose segments must be longer than any shot: they run across cuts and the total stays on target")
    func countBeyondTheShots() throws {
        let analysis = try analysis()
        let rules = SegmentRules(HighlightChoices(maxSegments: 2), target: 20)
        let selection = SegmentSelector.select(from: analysis, target: 20, rules: rules)
        #expect(selection.segments.count <= 2 && !selection.segments.isEmpty)
        #expect(abs(selection.total - 20) <= 0.5, "total \(selection.total): \(selection.segments.map { ($0.start, $0.end) })")
        for (a, b) in zip(selection.segments, selection.segments.dropFirst()) { #expect(a.end <= b.start) }
    }

    @Test("choices are checked: ranges, contradictions, an unreachable target")
    func choiceValidation() throws {
        func field(
            _ min: String? = nil, _ max: String? = nil, _ count: String? = nil, _ aspect: String? = nil,
            target: Double = 30
        ) -> String? {
            do {
                _ = try HighlightChoices.parse(minSegment: min, maxSegment: max, maxSegments: count, aspect: aspect, targetDuration: target)
                return nil
            } catch { return error.field }
        }
        #expect(field() == nil)
        #expect(field("", " ", "", "") == nil)
        #expect(field("0.5") == "min_segment")
        #expect(field(nil, "61") == "max_segment")
        #expect(field(nil, "nan") == "max_segment")
        #expect(field(nil, nil, "0") == "max_segments")
        #expect(field(nil, nil, "2.5") == "max_segments")
        #expect(field(nil, nil, nil, "3:4") == "aspect")
        #expect(field("5", "4") == "segments")
        #expect(field("20", target: 10) == "segments")
        #expect(field(nil, "3", "5", target: 30) == "segments")
        #expect(field(nil, "3", "10", target: 30) == nil)
        #expect(
            try HighlightChoices.parse(minSegment: "2.5", maxSegment: nil, maxSegments: nil, aspect: "9:16", targetDuration: 30)
                == HighlightChoices(minSegment: 2.5, aspect: .portrait))
        // fps: 30 (the default) or source, in any case; nothing else.
        for (text, expected) in [(nil, FrameRateChoice.upTo30), ("", .upTo30), ("30", .upTo30), ("Source", .source), (" source ", .source)] {
            #expect(
                try HighlightChoices.parse(minSegment: nil, maxSegment: nil, maxSegments: nil, aspect: nil, fps: text, targetDuration: 30).fps
                    == expected, "\(String(describing: text))")
        }
        for text in ["24", "60", "29.97", "auto"] {
            #expect(throws: HighlightChoices.Invalid.self) {
                try HighlightChoices.parse(minSegment: nil, maxSegment: nil, maxSegments: nil, aspect: nil, fps: text, targetDuration: 30)
            }
        }
        // quality=original keeps the source's rate: fps left out or source becomes source; 30 contradicts it.
        for text in [nil, "", "source"] {
            #expect(
                try HighlightChoices.parse(
                    minSegment: nil, maxSegment: nil, maxSegments: nil, aspect: nil, fps: text, targetDuration: 30,
                    quality: .original
                ).fps == .source, "\(String(describing: text))")
        }
        let contradiction = #expect(throws: HighlightChoices.Invalid.self) {
            try HighlightChoices.parse(
                minSegment: nil, maxSegment: nil, maxSegments: nil, aspect: nil, fps: "30", targetDuration: 30,
                quality: .original)
        }
        #expect(contradiction?.field == "fps" && contradiction?.message.contains("quality=original") == true)
        #expect(Quality(rawValue: "original")?.maxLongSide == 7680 && Quality.names == "high, medium, low or original")
        // Choices stored before fps existed read as the default.
        let stored = try JSONDecoder().decode(HighlightChoices.self, from: Data(#"{"min_segment": 2, "aspect": "1:1"}"#.utf8))
        #expect(stored == HighlightChoices(minSegment: 2, aspect: .square, fps: .upTo30))
        let written = try JSONDecoder().decode(HighlightChoices.self, from: JSONEncoder().encode(HighlightChoices(fps: .source)))
        #expect(written.fps == .source)
    }
}
