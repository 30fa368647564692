import Foundation

/// Where a highlight may cut without cutting anyone off: the source's speech, grouped into
/// utterances (spans less than `sentenceGap` apart), and the pauses between them.
struct SpeechPauses: Sendable {
    /// Spans closer than this belong to one utterance: a breath or a comma, not the end of a sentence.
    static let sentenceGap = 0.4
    /// How far into a pause an edge is put, so that a frame's rounding keeps it there.
    static let margin = 0.06

    /// Utterances, in order.
    let utterances: [SpeechSpan]
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
    }

    var isEmpty: Bool { spans.isEmpty }

    /// The utterance `t` falls in (or within `margin` of), if any.
    func utterance(at t: Double) -> SpeechSpan? { Self.span(at: t, in: utterances) }

    /// Whether an edge at `t` cuts no speech: it lies in a pause of at least the shortest pause.
    func allows(_ t: Double) -> Bool { Self.span(at: t, in: spans) == nil }

    /// Whether an edge at `t` also keeps every utterance whole.
    func keepsWhole(_ t: Double) -> Bool { utterance(at: t) == nil }

    private static func span(at t: Double, in spans: [SpeechSpan]) -> SpeechSpan? {
        var low = 0, high = spans.count
        while low < high {
            let middle = (low + high) / 2
            if spans[middle].end + margin <= t { low = middle + 1 } else { high = middle }
        }
        return low < spans.count && spans[low].start - margin < t ? spans[low] : nil
    }

    /// Where an edge goes to keep `utterance` in (or out): in the pause before it (`before`) or
    /// after it, a quarter second from the speech or half way across a shorter pause.
    func edge(_ side: Side, of utterance: SpeechSpan) -> Double {
        let index = utterances.firstIndex(of: utterance)
        switch side {
        case .before:
            let gap = index.flatMap { $0 > 0 ? utterance.start - utterances[$0 - 1].end : nil } ?? .infinity
            return utterance.start - max(Self.margin, min(0.25, gap / 2))
        case .after:
            let gap = index.flatMap { $0 + 1 < utterances.count ? utterances[$0 + 1].start - utterance.end : nil } ?? .infinity
            return utterance.end + max(Self.margin, min(0.25, gap / 2))
        }
    }

    enum Side { case before, after }

    /// The pauses inside `utterance` (between its spans), as the times an edge may take there.
    func innerPauses(of utterance: SpeechSpan) -> [Double] {
        let inside = spans.filter { $0.start >= utterance.start - 1e-9 && $0.end <= utterance.end + 1e-9 }
        return zip(inside, inside.dropFirst()).map { ($0.end + $1.start) / 2 }
    }

    /// The stretch of no speech around `t` (an edge may move freely inside it), edges `margin` off
    /// the speech on either side; nil when `t` is in speech.
    func pause(around t: Double) -> ClosedRange<Double>? {
        guard allows(t) else { return nil }
        let before = spans.last { $0.end + Self.margin <= t + 1e-9 }.map { $0.end + Self.margin } ?? -.infinity
        let after = spans.first { $0.start - Self.margin >= t - 1e-9 }.map { $0.start - Self.margin } ?? .infinity
        return min(before, t)...max(after, t)
    }
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
    /// Moves every edge that falls inside an utterance into a pause: the segment grows to take the
    /// utterance whole where its shot, its neighbours and the longest segment allow, else shrinks
    /// to leave it out; an utterance longer than a segment may be is cut at a pause inside it. Then
    /// the total is brought back to `target` by moving edges only within pauses, or over whole
    /// utterances. Returns the segments and how many edges moved.
    static func placeEdgesInPauses(_ segments: [Segment], pauses: SpeechPauses, analysis: Analysis, target: Double?,
                                   rules: SegmentRules) -> (segments: [Segment], moved: Int) {
        guard !pauses.isEmpty, !segments.isEmpty else { return (segments, 0) }
        var result = segments.sorted { $0.start < $1.start }
        let duration = analysis.info.duration
        let margin = SpeechPauses.margin
        func bounds(_ i: Int) -> ClosedRange<Double> {
            let shot = analysis.shots.indices.contains(result[i].shot) ? analysis.shots[result[i].shot] : Shot(start: 0, end: duration)
            let low = max(shot.start, i > 0 ? result[i - 1].end + 0.25 : 0)
            let high = min(shot.end, i + 1 < result.count ? result[i + 1].start - 0.25 : duration)
            return low...max(low, high)
        }
        // The lengths a segment may take: the rules', or its own where it already lies past a
        // bound the rules only prefer.
        func lengths(_ i: Int) -> ClosedRange<Double> {
            let low = rules.floorIsPromise ? rules.shortest : min(rules.shortest, result[i].duration)
            return low...max(low, rules.capsEveryPass ? rules.longest : max(rules.longest, result[i].duration))
        }
        func fits(_ start: Double, _ end: Double, _ i: Int) -> Bool {
            let b = bounds(i), l = lengths(i)
            return start >= b.lowerBound - 1e-9 && end <= b.upperBound + 1e-9 && l.contains(end - start)
        }
        var moved = 0
        for i in result.indices {
            var (start, end) = (result[i].start, result[i].end)
            // Candidate edges for each side: whole-utterance edges first, then pauses inside one.
            func choices(for t: Double, isStart: Bool) -> [Double] {
                guard let u = pauses.utterance(at: t) else { return [t] }
                let outside = isStart ? [pauses.edge(.before, of: u), pauses.edge(.after, of: u)] : [pauses.edge(.after, of: u), pauses.edge(.before, of: u)]
                let inner = pauses.innerPauses(of: u).sorted { abs($0 - t) < abs($1 - t) }
                return outside + inner
            }
            let starts = choices(for: start, isStart: true), ends = choices(for: end, isStart: false)
            var best: (start: Double, end: Double, rank: Int)?
            for (a, s) in starts.enumerated() {
                for (b, e) in ends.enumerated() where fits(s, e, i) {
                    // Whole utterances first (the earlier choices), then the least change.
                    let rank = a + b
                    let change = abs(s - start) + abs(e - end)
                    if best == nil || rank < best!.rank
                        || (rank == best!.rank && change < abs(best!.start - start) + abs(best!.end - end)) {
                        best = (s, e, rank)
                    }
                }
            }
            guard let best else {
                // No pause near its edges fits: the best window of the shot between pauses instead.
                if let window = pauses.window(in: bounds(i), lengths: lengths(i), near: result[i].duration,
                                              score: { meanScore(analysis, $0, $1) }) {
                    (result[i].start, result[i].end) = window
                    moved += 2
                }
                continue
            }
            if abs(best.start - start) > 1e-9 { moved += 1 }
            if abs(best.end - end) > 1e-9 { moved += 1 }
            (start, end) = (best.start, best.end)
            result[i].start = start
            result[i].end = end
        }
        guard let target else { return (result, moved) }

        // The total: first within the pauses the edges are in, then over whole utterances.
        var delta = target - result.reduce(0) { $0 + $1.duration }
        let byScore = result.indices.sorted { result[$0].score > result[$1].score }
        for i in delta > 0 ? byScore : byScore.reversed() where abs(delta) > 0.01 {
            let b = bounds(i)
            for isEnd in [true, false] where abs(delta) > 0.01 {
                let edge = isEnd ? result[i].end : result[i].start
                guard let free = pauses.pause(around: edge) else { continue }
                let room = free.clamped(to: b)
                // Growing moves the end later or the start earlier; shrinking the reverse.
                let direction: Double = (delta > 0) == isEnd ? 1 : -1
                let limit = direction > 0 ? room.upperBound - edge : edge - room.lowerBound
                let lengthRoom = delta > 0 ? lengths(i).upperBound - result[i].duration : result[i].duration - lengths(i).lowerBound
                let step = max(0, min(abs(delta), limit, lengthRoom))
                if isEnd { result[i].end += direction * step } else { result[i].start -= direction * step }
                delta -= (delta > 0 ? 1 : -1) * step
            }
        }
        var jumped = true
        while abs(delta) > tolerance && jumped {
            jumped = false
            for i in delta > 0 ? byScore : byScore.reversed() where abs(delta) > tolerance {
                // Over the next utterance past the end (growing), or back before the last one (shrinking).
                let end = result[i].end
                let next = delta > 0 ? pauses.utterances.first { $0.start >= end - 1e-9 }.map { pauses.edge(.after, of: $0) }
                    : pauses.utterances.last { $0.end <= end + 1e-9 && $0.start > result[i].start }.map { pauses.edge(.before, of: $0) }
                guard let next, fits(result[i].start, next, i), abs(delta - (next - end)) < abs(delta) else { continue }
                delta -= next - end
                result[i].end = next
                jumped = true
            }
        }
        // Still short: a new segment between pauses in the largest free stretch that holds one.
        while delta > tolerance, result.count < rules.count ?? .max {
            var free: [ClosedRange<Double>] = []
            var previous = 0.0
            for segment in result + [Segment(start: duration + 0.25, end: duration, score: 0, reasons: [], shot: acrossShots)] {
                if segment.start - 0.25 > previous + 0.25 { free.append((previous + (previous > 0 ? 0.25 : 0))...(segment.start - 0.25)) }
                previous = segment.end
            }
            let wanted = min(max(delta, rules.shortest), rules.longest)
            let found = free.sorted { $0.upperBound - $0.lowerBound > $1.upperBound - $1.lowerBound }.lazy.compactMap { stretch in
                pauses.window(in: stretch, lengths: rules.shortest...max(rules.shortest, delta + tolerance), near: wanted,
                              score: { meanScore(analysis, $0, $1) })
            }.first
            guard let (start, end) = found else { break }
            let added = Segment(start: start, end: end, score: meanScore(analysis, start, end), reasons: ["fills the highlight"], shot: acrossShots)
            result.insert(added, at: result.firstIndex { $0.start > start } ?? result.count)
            delta -= added.duration
        }
        return (result, moved)
    }
}

extension SpeechPauses {
    /// The best-scoring window inside `range` whose edges keep every utterance whole, of a length in
    /// `lengths` (nearest `near` first, then by score); edges at the range's ends, in the pauses
    /// around its utterances, or every half second where no one speaks.
    func window(in range: ClosedRange<Double>, lengths: ClosedRange<Double>, near: Double,
                score: (Double, Double) -> Double) -> (Double, Double)? {
        var points = [range.lowerBound, range.upperBound]
        for u in utterances where u.end > range.lowerBound && u.start < range.upperBound {
            points += [edge(.before, of: u), edge(.after, of: u)]
        }
        points += stride(from: range.lowerBound, through: range.upperBound, by: 0.5)
        points = Array(Set(points.filter { range.contains($0) && keepsWhole($0) })).sorted()
        var best: (start: Double, end: Double, miss: Double, score: Double)?
        for (k, start) in points.enumerated() {
            for end in points[(k + 1)...] where lengths.contains(end - start) {
                let miss = (abs(end - start - near) * 4).rounded() / 4
                let value = score(start, end)
                if best == nil || miss < best!.miss || (miss == best!.miss && value > best!.score) { best = (start, end, miss, value) }
            }
        }
        return best.map { ($0.start, $0.end) }
    }
}
