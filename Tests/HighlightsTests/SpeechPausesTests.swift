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
}
