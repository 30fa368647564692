import Foundation

/// Where a highlight may cut without cutting anyone off: the source's speech, grouped into
/// utterances (spans less than `sentenceGap` apart), and the pauses between them.
struct SpeechPauses: Sendable {
    /// Spans closer than this belong to one utterance: a breath or a comma (held up to 0.7 s), not
    /// the end of a sentence.
    static let sentenceGap = 0.75
    /// How far from speech an edge stays: a frame's rounding, and a quiet last syllable the
    /// detector heard end a little early, keep it in the pause.
    static let margin = 0.12
    /// How far from the speech an edge sliding in a pause stays: the detector may hear a
    /// sentence's quiet last syllable end up to a sixth of a second early.
    static let slideClearance = 0.25

    /// A pause after the voice fell by this much (semitones) is likelier a sentence's end than a
    /// longer one after a level or rising voice; a fall of nearly an octave or more is the pitch
    /// tracker mistaking the octave, not the voice.
    static let finalFall = 3.0...9.0
    /// How much longer a pause after such a fall counts when an utterance is split (seconds): the
    /// fall decides only between pauses of nearly one length, since over music the pitch is heard
    /// less surely than the silence.
    static let fallWeight = 0.1

    /// How likely the pause between `before` and `after` ends a sentence, as a length in seconds.
    static func weight(_ before: SpeechSpan, _ after: SpeechSpan) -> Double {
        after.start - before.end + (before.fall.map(finalFall.contains) == true ? fallWeight : 0)
    }

    /// Utterances, in order.
    let utterances: [SpeechSpan]
    /// Where each utterance starts.
    private let starts: [Double]
    /// The speech as detected, for cutting inside an utterance too long to keep whole (at a pause of
    /// at least `SpeechDetector.shortestPause`).
    let spans: [SpeechSpan]

    init(_ spans: [SpeechSpan]) {
        self.spans = spans
        var grouped: [SpeechSpan] = []
        for span in spans {
            if let last = grouped.last, span.start - last.end < Self.sentenceGap {
                grouped[grouped.count - 1].end = max(last.end, span.end)
            } else {
                grouped.append(span)
            }
        }
        utterances = grouped
        starts = grouped.map(\.start)
    }

    var isEmpty: Bool { spans.isEmpty }

    /// The utterance `t` falls in (or within `margin` of), if any.
    func utterance(at t: Double) -> SpeechSpan? { Self.span(at: t, in: utterances) }

    /// Whether an edge at `t` cuts no speech: it lies in a pause of at least the shortest pause.
    func allows(_ t: Double) -> Bool { Self.span(at: t, in: spans) == nil }

    /// Whether an edge at `t` also keeps every utterance whole.
    func keepsWhole(_ t: Double) -> Bool { utterance(at: t) == nil }

    /// Whether an edge at `t` keeps every utterance whole and lies `clearance` or more from any
    /// (an edge not chosen from the pauses, such as a keyframe, where the detector may have
    /// heard a sentence begin or end a little late or early).
    func keepsWhole(_ t: Double, clearance: Double) -> Bool {
        keepsWhole(t) && keepsWhole(t - clearance) && keepsWhole(t + clearance)
    }

    private static func span(at t: Double, in spans: [SpeechSpan]) -> SpeechSpan? {
        var low = 0, high = spans.count
        while low < high {
            let middle = (low + high) / 2
            if spans[middle].end + margin <= t { low = middle + 1 } else { high = middle }
        }
        return low < spans.count && spans[low].start - margin < t ? spans[low] : nil
    }

    /// The stretch with no utterance around `t`, `slideClearance` clear of the speech on either
    /// side (where an edge may slide); nil when `t` is inside an utterance.
    func pause(around t: Double) -> ClosedRange<Double>? {
        guard keepsWhole(t) else { return nil }
        // Outside every utterance, those before `t` end before it.
        let next = starts.firstIndex(atOrAfter: t)
        let before = next > 0 ? utterances[next - 1].end + Self.slideClearance : -.infinity
        let after = next < utterances.count ? utterances[next].start - Self.slideClearance : .infinity
        return min(before, t)...max(after, t)
    }

    /// The times a segment's edges may take: in the pauses between utterances (a quarter second
    /// from the speech or half way across a shorter pause, then every half second across a long
    /// one), on a cut that falls in a pause (pause points less than half a second from it give way
    /// to it), never inside a gradual transition; and, as a last resort (`inner`), the pauses
    /// that split an utterance longer than `longest` (the longest a segment may be) into parts
    /// that fit.
    func edgePoints(shots: [Shot], duration: Double, longest: Double) -> [EdgePoint] {
        var points: [EdgePoint] = []
        let cuts = shots.dropFirst().map(\.start)
        // Between two shots that do not touch lies a dissolve or a fade: no edge there.
        let transitions = zip(shots, shots.dropFirst()).compactMap { $1.start - $0.end > 0.05 ? ($0.end...$1.start) : nil }
        var from = 0.0
        for u in utterances + [SpeechSpan(start: duration, end: duration)] {
            defer { from = u.end }
            let to = u.start
            guard to - from > 2 * Self.margin else {
                // Speech that starts within a margin of the source's start: its start alone.
                if from == 0 && to > 0 { points.append(EdgePoint(time: 0, inner: false)) }
                continue
            }
            let inset = min(0.25, (to - from) / 2)
            let low = from == 0 ? 0 : from + inset, high = to >= duration ? duration : to - inset
            let here = cuts.filter { $0 > from + Self.margin && $0 < to - Self.margin }
            points += here.map { EdgePoint(time: $0, inner: false) }
            var t = low
            while t <= high + 1e-9 {
                if !here.contains(where: { abs($0 - t) < 0.5 }) { points.append(EdgePoint(time: t, inner: false)) }
                t += 0.5
            }
            if high - (t - 0.5) > 0.1, !here.contains(where: { abs($0 - high) < 0.5 }) { points.append(EdgePoint(time: high, inner: false)) }
        }
        // An utterance too long for a segment is split at its likeliest end of a sentence, and each
        // part again, until every part fits: the longest pause, a pause after a falling voice
        // counting `fallWeight` longer.
        func split(_ parts: ArraySlice<SpeechSpan>) -> [Double] {
            guard parts.count > 1, let last = parts.last, let first = parts.first, last.end - first.start > longest else { return [] }
            let k = zip(parts.indices, parts.indices.dropFirst()).max {
                Self.weight(parts[$0.0], parts[$0.1]) < Self.weight(parts[$1.0], parts[$1.1])
            }!
            return split(parts[...k.0]) + [(parts[k.0].end + parts[k.1].start) / 2] + split(parts[k.1...])
        }
        for u in utterances where u.duration > longest {
            let inside = spans.filter { $0.start >= u.start - 1e-9 && $0.end <= u.end + 1e-9 }
            points += split(inside[...]).map { EdgePoint(time: $0, inner: true) }
        }
        return points.filter { p in !transitions.contains { $0.lowerBound < p.time && p.time < $0.upperBound } }
            .sorted { $0.time < $1.time }
    }
}

/// A time a segment edge may take where there is speech; `inner`: inside a long utterance.
struct EdgePoint: Sendable, Equatable {
    var time: Double
    var inner: Bool
}

/// What keeping speech whole did to a selection (for the report).
public struct SpeechEdits: Sendable, Codable, Equatable {
    /// Edges that fell inside speech and were moved into a pause.
    public var edgesMoved: Int
    /// Edges left inside speech: no pause around them fits the segment's rules and shot.
    public var edgesInSpeech: Int
    /// Utterances the highlight plays whole, and those it plays in part (longer than a segment may be).
    public var utterancesWhole: Int
    public var utterancesCut: Int

    enum CodingKeys: String, CodingKey {
        case edgesMoved = "edges_moved_into_pauses", edgesInSpeech = "edges_in_speech"
        case utterancesWhole = "utterances_whole", utterancesCut = "utterances_cut"
    }

    /// Counts what `segments` play of `pauses`' utterances.
    init(segments: [Segment], pauses: SpeechPauses, moved: Int) {
        edgesMoved = moved
        edgesInSpeech = segments.reduce(0) { $0 + (pauses.allows($1.start) ? 0 : 1) + (pauses.allows($1.end) ? 0 : 1) }
        var whole = 0, cut = 0
        for utterance in pauses.utterances {
            let overlapping = segments.filter { $0.start < utterance.end && utterance.start < $0.end }
            guard !overlapping.isEmpty else { continue }
            if overlapping.contains(where: { $0.start <= utterance.start + 1e-6 && $0.end >= utterance.end - 1e-6 }) { whole += 1 } else { cut += 1 }
        }
        utterancesWhole = whole
        utterancesCut = cut
    }
}

extension SegmentSelector {
    /// Candidate windows whose edges are `points` (pauses, cuts in pauses): every length the
    /// rules allow, across cuts where a sentence runs over one. One from the pauses inside a long
    /// utterance scores less.
    static func speechCandidates(_ analysis: Analysis, points: [EdgePoint], rules: SegmentRules) -> [Segment] {
        let low = rules.lengths.min() ?? rules.shortest, high = max(rules.longest, rules.lengths.max() ?? 0)
        var result: [Segment] = []
        for (k, a) in points.enumerated() {
            for b in points[(k + 1)...] {
                let length = b.time - a.time
                if length > high + 1e-9 { break }
                guard length >= low - 1e-9 else { continue }
                let penalty = a.inner || b.inner ? 0.7 : 1
                result.append(
                    Segment(
                        start: a.time, end: b.time, score: meanScore(analysis, a.time, b.time) * penalty, reasons: [],
                        shot: shot(containing: a.time, b.time, in: analysis.shots)))
            }
        }
        return result
    }

    /// The shot `start..<end` lies in, or `acrossShots`.
    static func shot(containing start: Double, _ end: Double, in shots: [Shot]) -> Int {
        shots.firstIndex { $0.start <= start + 1e-6 && end <= $0.end + 1e-6 } ?? acrossShots
    }

    /// The best-scoring window inside `range` between two of `points`, of a length in `lengths`
    /// (nearest `near` first, to a quarter second, then by score).
    static func window(
        among points: [EdgePoint], in range: ClosedRange<Double>, lengths: ClosedRange<Double>, near: Double,
        score: (Double, Double) -> Double
    ) -> (Double, Double)? {
        let inside = points.map(\.time).filter { range.contains($0) }
        var best: (start: Double, end: Double, miss: Double, score: Double)?
        for (k, start) in inside.enumerated() {
            for end in inside[(k + 1)...] where lengths.contains(end - start) {
                let miss = (abs(end - start - near) * 4).rounded() / 4
                let value = score(start, end)
                if best == nil || miss < best!.miss || (miss == best!.miss && value > best!.score) { best = (start, end, miss, value) }
            }
        }
        return best.map { ($0.start, $0.end) }
    }
}
