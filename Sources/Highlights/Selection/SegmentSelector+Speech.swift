import Foundation

/// Where a highlight may cut without cutting anyone off: the source's speech, grouped into
/// utterances (spans less than `sentenceGap` apart), and the pauses between them.
struct SpeechPauses: Sendable {
    /// Spans closer than this belong to one utterance: a breath or a comma, not the end of a sentence.
    static let sentenceGap = 0.5
    /// How far into a pause an edge is put, so that a frame's rounding keeps it there.
    static let margin = 0.06
    /// How far from the speech an edge sliding in a pause stays: the detector may hear a
    /// sentence's quiet last syllable end up to a sixth of a second early.
    static let slideClearance = 0.25

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
        let before = utterances.last { $0.end <= t }.map { $0.end + Self.slideClearance } ?? -.infinity
        let after = utterances.first { $0.start >= t }.map { $0.start - Self.slideClearance } ?? .infinity
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
            guard to - from > 2 * Self.margin || (from == 0 && to > 0) else { continue }
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
        // An utterance too long for a segment is split at its longest pause, and each part again,
        // until every part fits: the longest pause is the likeliest end of a sentence.
        func split(_ parts: ArraySlice<SpeechSpan>) -> [Double] {
            guard parts.count > 1, let last = parts.last, let first = parts.first, last.end - first.start > longest else { return [] }
            let k = zip(parts.indices, parts.indices.dropFirst()).max { parts[$0.1].start - parts[$0.0].end < parts[$1.1].start - parts[$1.0].end }!
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
                result.append(Segment(start: a.time, end: b.time, score: meanScore(analysis, a.time, b.time) * penalty, reasons: [],
                                      shot: shot(containing: a.time, b.time, in: analysis.shots)))
            }
        }
        return result
    }

    /// The shot `start..<end` lies in, or `acrossShots`.
    static func shot(containing start: Double, _ end: Double, in shots: [Shot]) -> Int {
        shots.firstIndex { $0.start <= start + 1e-6 && end <= $0.end + 1e-6 } ?? acrossShots
    }

    /// Puts every edge on one of `points`: an edge inside an utterance moves to the pause before or
    /// after it (taking it whole or leaving it out, whichever fits the neighbours and the lengths
    /// the rules allow, the least change first); a segment none fits moves to the best window of
    /// points between its neighbours, or is left out when there is none. Then the total is brought back to `target` one edge at a
    /// time from point to point (each step the one that lands closest), and a window between
    /// points is added while it is still short. Returns the segments and how many edges moved
    /// out of speech.
    static func placeEdgesInPauses(_ segments: [Segment], pauses: SpeechPauses, points: [EdgePoint], analysis: Analysis,
                                   target: Double?, rules: SegmentRules) -> (segments: [Segment], moved: Int) {
        guard !pauses.isEmpty, !segments.isEmpty, !points.isEmpty else { return (segments, 0) }
        var result = segments.sorted { $0.start < $1.start }
        let duration = analysis.info.duration
        let times = points.map(\.time)
        func spacing(_ a: Segment, _ b: Segment) -> Double { a.shot == b.shot && a.shot != acrossShots ? momentApart : 0.25 }
        func bounds(_ i: Int) -> ClosedRange<Double> {
            let low = i > 0 ? result[i - 1].end + spacing(result[i - 1], result[i]) : 0
            let high = i + 1 < result.count ? result[i + 1].start - spacing(result[i], result[i + 1]) : duration
            return low...max(low, high)
        }
        // The lengths a segment may take: the rules', or its own where it already lies past a
        // bound the rules only prefer.
        func lengths(_ i: Int) -> ClosedRange<Double> {
            let low = rules.floorIsPromise ? rules.shortest : min(rules.shortest, result[i].duration)
            return low...max(low, rules.capsEveryPass ? rules.longest : max(rules.longest, result[i].duration))
        }
        func fits(_ start: Double, _ end: Double, _ i: Int) -> Bool {
            let b = bounds(i)
            return start >= b.lowerBound - 1e-9 && end <= b.upperBound + 1e-9 && lengths(i).contains(end - start)
        }
        func place(_ i: Int, _ start: Double, _ end: Double) {
            result[i].start = start
            result[i].end = end
            result[i].shot = shot(containing: start, end, in: analysis.shots)
        }
        // The points nearest `t` on either side (two each), or `t` itself when it keeps speech whole.
        func choices(_ t: Double) -> [Double] {
            if pauses.keepsWhole(t) { return [t] }
            let after = times.firstIndex(atOrAfter: t)
            return [after - 2, after - 1, after, after + 1].filter { times.indices.contains($0) }.map { times[$0] }
        }
        var moved = 0
        var unplaced: [Int] = []
        for i in result.indices {
            let (start, end) = (result[i].start, result[i].end)
            guard !pauses.keepsWhole(start) || !pauses.keepsWhole(end) else { continue }
            var best: (start: Double, end: Double, change: Double)?
            for s in choices(start) {
                for e in choices(end) where fits(s, e, i) {
                    let change = abs(s - start) + abs(e - end)
                    if best == nil || change < best!.change - 1e-9 { best = (s, e, change) }
                }
            }
            if let best {
                moved += (best.start != start ? 1 : 0) + (best.end != end ? 1 : 0)
                place(i, best.start, best.end)
            } else if let window = window(among: points, in: bounds(i), lengths: lengths(i), near: result[i].duration,
                                          score: { meanScore(analysis, $0, $1) }) {
                moved += (window.0 != start ? 1 : 0) + (window.1 != end ? 1 : 0)
                place(i, window.0, window.1)
            } else {
                unplaced.append(i)
            }
        }
        // No pause around it fits a segment: it is left out (while others remain), and the total
        // made up below.
        if unplaced.count < result.count {
            for i in unplaced.reversed() { result.remove(at: i) }
        }
        guard let target else { return (result, moved) }

        // The total: one segment at a time, the change that lands closest: a segment moves to
        // another window between points that still holds part of it (an edge or both step in or
        // out, or it slides along), or one is left out. The best-scoring window wins a tie.
        var total = result.reduce(0) { $0 + $1.duration }
        while abs(target - total) > 0.1 {
            var best: (miss: Double, score: Double, i: Int, window: (Double, Double)?)?
            func consider(_ miss: Double, _ score: Double, _ i: Int, _ window: (Double, Double)?) {
                guard miss < abs(target - total) - 1e-6 else { return }
                let miss = (miss * 20).rounded() / 20
                if best == nil || miss < best!.miss - 1e-9 || (abs(miss - best!.miss) <= 1e-9 && score > best!.score) {
                    best = (miss, score, i, window)
                }
            }
            for i in result.indices {
                let (start, end) = (result[i].start, result[i].end), rest = total - (end - start)
                let inside = times.filter { bounds(i).contains($0) }
                for (k, s) in inside.enumerated() where s < end {
                    for e in inside[(k + 1)...] where e > start && fits(s, e, i) && (s != start || e != end) {
                        consider(abs(target - (rest + e - s)), meanScore(analysis, s, e), i, (s, e))
                    }
                }
                if result.count > 1 { consider(abs(target - rest), -.infinity, i, nil) }
            }
            // Still further than the tolerance: a segment may give way to a window elsewhere
            // (one that shows no scene already shown), the best-scoring of those that land
            // closest to a quarter second.
            if abs(target - total) > tolerance && (best == nil || best!.miss > tolerance) {
                for i in result.indices {
                    let rest = total - result[i].duration
                    let others = result.indices.filter { $0 != i }.map { result[$0] }
                    for (k, a) in times.enumerated() {
                        for e in times[(k + 1)...] {
                            let length = e - a
                            if length > lengths(i).upperBound + 1e-9 { break }
                            guard length >= lengths(i).lowerBound - 1e-9 else { continue }
                            let miss = abs(target - (rest + length))
                            guard miss < abs(target - total) - 1e-6, (best?.miss ?? .infinity) > (miss * 4).rounded() / 4 - 1e-9 else { continue }
                            var candidate = Segment(start: a, end: e, score: meanScore(analysis, a, e), reasons: [],
                                                    shot: shot(containing: a, e, in: analysis.shots))
                            guard !others.contains(where: { candidate.start < $0.end + spacing($0, candidate) && $0.start < candidate.end + spacing($0, candidate) }),
                                  !others.contains(where: { isRepeat(candidate, of: $0, in: analysis) }) else { continue }
                            candidate.reasons = result[i].reasons
                            let rounded = (miss * 4).rounded() / 4
                            if best == nil || rounded < best!.miss - 1e-9 || (abs(rounded - best!.miss) <= 1e-9 && candidate.score > best!.score) {
                                best = (rounded, candidate.score, i, (a, e))
                            }
                        }
                    }
                }
            }
            guard let move = best else { break }
            if let (s, e) = move.window {
                total += (e - s) - result[move.i].duration
                place(move.i, s, e)
                result[move.i].score = meanScore(analysis, s, e)
                result.sort { $0.start < $1.start }
            } else {
                total -= result[move.i].duration
                result.remove(at: move.i)
            }
        }
        // Then finely: edges slide inside their pauses (never off a cut, nor to within half a
        // second of one), growing the best segments first or shrinking the weakest.
        let cuts = analysis.shots.dropFirst().map(\.start)
        let byScore = result.indices.sorted { result[$0].score > result[$1].score }
        for i in total < target ? byScore : byScore.reversed() where abs(target - total) > 0.05 {
            for isEnd in [true, false] where abs(target - total) > 0.05 {
                let delta = target - total
                let edge = isEnd ? result[i].end : result[i].start
                guard !cuts.contains(where: { abs($0 - edge) < 1e-3 }), var room = pauses.pause(around: edge) else { continue }
                for cut in cuts where room.contains(cut) {
                    room = cut < edge ? max(room.lowerBound, cut + 0.5)...max(room.upperBound, cut + 0.5)
                                      : min(room.lowerBound, cut - 0.5)...min(room.upperBound, cut - 0.5)
                }
                guard room.contains(edge) else { continue }
                let b = bounds(i), l = lengths(i)
                // Growing moves the end later or the start earlier; shrinking the reverse.
                let later = (delta > 0) == isEnd
                let reach = later ? min(room.upperBound, isEnd ? b.upperBound : .infinity) - edge
                                  : edge - max(room.lowerBound, isEnd ? -.infinity : b.lowerBound)
                let lengthRoom = delta > 0 ? l.upperBound - result[i].duration : result[i].duration - l.lowerBound
                let step = max(0, min(abs(delta), reach, lengthRoom))
                guard step > 1e-6 else { continue }
                let moved = edge + (later ? step : -step)
                if isEnd { place(i, result[i].start, moved) } else { place(i, moved, result[i].end) }
                total += delta > 0 ? step : -step
            }
        }
        // Still short: a new segment between points in the largest free stretch that holds one.
        while target - total > tolerance, result.count < rules.count ?? .max {
            var free: [ClosedRange<Double>] = []
            var previous = 0.0
            for segment in result {
                if segment.start - 0.25 > previous + 0.25 { free.append((previous == 0 ? 0 : previous + 0.25)...(segment.start - 0.25)) }
                previous = segment.end
            }
            if duration > previous + 0.25 { free.append((previous == 0 ? 0 : previous + 0.25)...duration) }
            let delta = target - total
            let wanted = min(max(delta, rules.shortest), rules.longest)
            let found = free.sorted { $0.upperBound - $0.lowerBound > $1.upperBound - $1.lowerBound }.lazy.compactMap { stretch in
                window(among: points, in: stretch, lengths: rules.shortest...max(rules.shortest, min(rules.longest, delta + tolerance)),
                       near: wanted, score: { meanScore(analysis, $0, $1) })
            }.first
            guard let (start, end) = found else { break }
            let added = Segment(start: start, end: end, score: meanScore(analysis, start, end), reasons: ["fills the highlight"],
                                shot: shot(containing: start, end, in: analysis.shots))
            result.insert(added, at: result.firstIndex { $0.start > start } ?? result.count)
            total += added.duration
        }
        return (result, moved)
    }

    /// The best-scoring window inside `range` between two of `points`, of a length in `lengths`
    /// (nearest `near` first, to a quarter second, then by score).
    static func window(among points: [EdgePoint], in range: ClosedRange<Double>, lengths: ClosedRange<Double>, near: Double,
                       score: (Double, Double) -> Double) -> (Double, Double)? {
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
