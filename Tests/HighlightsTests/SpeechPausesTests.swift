import MediaSynth
import Testing

@testable import Highlights

/// Where edges may go around speech, on generated layouts of speech and shots.
@Suite("Speech pauses: where an edge may go")
struct SpeechPausesTests {
    /// Random speech (spans of 0.3–4 s with gaps of 0.05–2 s) over random shots (cuts every
    /// 0.5–6 s) in 60 s.
    static func layout(seed: UInt64) -> (spans: [SpeechSpan], shots: [Shot]) {
        var rng = SplitMix64(seed: seed)
        var spans: [SpeechSpan] = []
        var t = Double.random(in: 0...2, using: &rng)
        while t < 58 {
            let end = min(60, t + Double.random(in: 0.3...4, using: &rng))
            spans.append(SpeechSpan(start: t, end: end))
            t = end + Double.random(in: 0.05...2, using: &rng)
        }
        var shots: [Shot] = []
        var start = 0.0
        while start < 60 {
            let end = min(60, start + Double.random(in: 0.5...6, using: &rng))
            shots.append(Shot(start: start, end: end))
            start = end
        }
        return (spans, shots)
    }

    @Test("every edge point lies in a pause, and every cut clear of the speech is one", arguments: 0..<200)
    func edgePointsClear(seed: UInt64) {
        let (spans, shots) = Self.layout(seed: seed)
        let pauses = SpeechPauses(spans)
        let points = pauses.edgePoints(shots: shots, duration: 60, longest: 8)
        let cuts = Set(shots.dropFirst().map(\.start))
        // (The source's own ends cut nothing.)
        for point in points where !point.inner && point.time > 0 && point.time < 60 {
            // Never inside an utterance, nor within a frame's rounding of one.
            let nearest = pauses.utterances.map { max($0.start - point.time, point.time - $0.end) }.min() ?? .infinity
            #expect(nearest > SpeechPauses.margin - 1e-9, "seed \(seed): \(point.time) is in speech")
        }
        // A cut a quarter second or more from every utterance is always a point.
        for cut in cuts where cut < 60 - SpeechPauses.margin && pauses.utterances.allSatisfy({ $0.start - cut >= 0.25 || cut - $0.end >= 0.25 }) {
            #expect(points.contains { $0.time == cut }, "seed \(seed): the cut at \(cut), clear of speech, is no edge point")
        }
    }

    /// How an utterance's pause after a fall compares with its longest other pause.
    enum Fall: CaseIterable {
        /// A fall, and the pause shorter than the longest by less than `fallWeight`.
        case near
        /// A fall, and the pause shorter by `fallWeight` and more.
        case far
        /// An octave's "fall" (the pitch tracker's error), and the pause shorter by less.
        case octave
    }

    /// One utterance longer than a segment (8 s): 4–7 spans of 0.4–1.6 s, 0.15–0.7 s apart (one
    /// utterance), from 2 s on. One pause, `sentence`, comes after a voice that fell (see `Fall`);
    /// the rest come after a voice level, rising, unheard (nil) or "falling" an octave or more.
    /// Both sides of the sentence's pause fit in a segment.
    static func utterance(seed: UInt64, _ kind: Fall) -> (spans: [SpeechSpan], sentence: Int) {
        var rng = SplitMix64(seed: seed)
        let count = Int.random(in: 4...7, using: &rng), sentence = Int.random(in: 0..<(count - 1), using: &rng)
        var lengths = (0..<count).map { _ in Double.random(in: 0.4...1.6, using: &rng) }
        var gaps = (0..<(count - 1)).map { _ in Double.random(in: 0.15...0.7, using: &rng) }
        let others = gaps.indices.filter { $0 != sentence }
        let longest = others.max { gaps[$0] < gaps[$1] }!
        gaps[longest] = max(gaps[longest], 0.6)
        let weight = SpeechPauses.fallWeight
        let shorter =
            kind == .far ? Double.random(in: (weight + 0.02)...(weight + 0.3), using: &rng) : Double.random(in: 0.01...(weight - 0.01), using: &rng)
        gaps[sentence] = gaps[longest] - shorter
        // Longer than a segment, each side of the sentence's pause within one.
        func side(_ range: Range<Int>) -> Double { range.reduce(0) { $0 + lengths[$1] } + gaps[range.dropLast()].reduce(0, +) }
        while side(0..<count) <= 8.5 { lengths = lengths.map { $0 * 1.1 } }
        // (Only the spans shrink: the pauses stay as made, at most 0.7 s each.)
        for range in [0..<(sentence + 1), (sentence + 1)..<count] where side(range) > 7.5 {
            let pauses = gaps[range.dropLast()].reduce(0, +)
            let scale = (7.5 - pauses) / (side(range) - pauses)
            for i in range { lengths[i] *= scale }
        }
        var spans: [SpeechSpan] = []
        var t = 2.0
        for i in 0..<count {
            let fall: Double? =
                i == sentence
                ? (kind == .octave ? Double.random(in: 10...13, using: &rng) : Double.random(in: 3...9, using: &rng))
                : [nil, Double.random(in: -4...2.9, using: &rng), Double.random(in: 9.5...13, using: &rng)].randomElement(using: &rng)!
            spans.append(SpeechSpan(start: t, end: t + lengths[i], fall: fall))
            if i < count - 1 { t += lengths[i] + gaps[i] }
        }
        return (spans, sentence)
    }

    @Test("an utterance too long for a segment is split at its longest pause, one after a falling voice counting 0.1 s longer", arguments: 0..<300)
    func splitAfterAFall(seed: UInt64) throws {
        for kind in Fall.allCases {
            let (spans, sentence) = Self.utterance(seed: seed, kind)
            let pauses = SpeechPauses(spans)
            try #require(pauses.utterances.count == 1, "seed \(seed): one utterance, \(pauses.utterances)")
            let inner = pauses.edgePoints(shots: [Shot(start: 0, end: 30)], duration: 30, longest: 8).filter(\.inner).map(\.time)
            let at = { (i: Int) in (spans[i].end + spans[i + 1].start) / 2 }
            let gap = { (i: Int) in spans[i + 1].start - spans[i].end }
            switch kind {
            case .near:
                // The sentence's pause splits it, and each side then fits: nowhere else.
                #expect(inner.count == 1 && abs(inner[0] - at(sentence)) < 1e-9, "seed \(seed): split at \(inner), not \(at(sentence))")
            case .far, .octave:
                // The longest pause splits it first.
                let longest = spans.indices.dropLast().max { gap($0) < gap($1) }!
                #expect(longest != sentence)
                #expect(inner.contains { abs($0 - at(longest)) < 1e-9 }, "seed \(seed), \(kind): split at \(inner), not \(at(longest))")
            }
            // Every split lies in a pause between the spans.
            for t in inner { #expect(spans.allSatisfy { t <= $0.start || t >= $0.end }, "seed \(seed): \(t) is inside a span") }
        }
    }
}
