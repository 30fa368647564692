/// Fits a selection to the pauses of the speech in its source, in four steps:
///
/// 1. `placeEdges`: an edge inside an utterance moves to a point before or after it (taking it
///    whole or leaving it out, whichever fits the neighbours and the lengths the rules allow, the
///    least change first); a segment none fits moves to the best window of points between its
///    neighbours, or is left out when there is none.
/// 2. `bringTotal`: the total is brought back to the target a segment at a time, by the move
///    that lands closest.
/// 3. `slideEdges`: edges slide inside their pauses for the last fraction of a second.
/// 4. `fill`: a window between points is added while the total is still short.
struct PauseFit {
    private(set) var segments: [Segment]
    /// Edges moved out of speech.
    private(set) var moved = 0
    let pauses: SpeechPauses
    let points: [EdgePoint]
    let analysis: Analysis
    let rules: SegmentRules
    private let times: [Double]

    init(_ segments: [Segment], pauses: SpeechPauses, points: [EdgePoint], analysis: Analysis, rules: SegmentRules) {
        self.segments = segments.sorted { $0.start < $1.start }
        self.pauses = pauses
        self.points = points
        self.analysis = analysis
        self.rules = rules
        times = points.map(\.time)
    }

    var total: Double { segments.reduce(0) { $0 + $1.duration } }

    // MARK: Room

    /// How far apart two segments stay: a moment within one shot, a quarter second across a cut.
    private func spacing(_ a: Segment, _ b: Segment) -> Double {
        a.shot == b.shot && a.shot != SegmentSelector.acrossShots ? SegmentSelector.momentApart : 0.25
    }

    /// Where segment `i` may lie: between its neighbours, spaced from them.
    private func bounds(_ i: Int) -> ClosedRange<Double> {
        let low = i > 0 ? segments[i - 1].end + spacing(segments[i - 1], segments[i]) : 0
        let high = i + 1 < segments.count ? segments[i + 1].start - spacing(segments[i], segments[i + 1]) : analysis.info.duration
        return low...max(low, high)
    }

    /// The lengths segment `i` may take: the rules', or its own where it already lies past a bound
    /// the rules only prefer.
    private func lengths(_ i: Int) -> ClosedRange<Double> {
        let low = rules.floorIsPromise ? rules.shortest : min(rules.shortest, segments[i].duration)
        return low...max(low, rules.capsEveryPass ? rules.longest : max(rules.longest, segments[i].duration))
    }

    private func fits(_ start: Double, _ end: Double, _ i: Int) -> Bool {
        let b = bounds(i)
        return start >= b.lowerBound - 1e-9 && end <= b.upperBound + 1e-9 && lengths(i).contains(end - start)
    }

    private func score(_ start: Double, _ end: Double) -> Double { SegmentSelector.meanScore(analysis, start, end) }

    private mutating func place(_ i: Int, _ start: Double, _ end: Double) {
        segments[i].start = start
        segments[i].end = end
        segments[i].shot = SegmentSelector.shot(containing: start, end, in: analysis.shots)
    }

    // MARK: 1. Edges into pauses

    /// The points nearest `t` on either side (two each), or `t` itself when it keeps speech whole.
    private func choices(_ t: Double) -> [Double] {
        if pauses.keepsWhole(t) { return [t] }
        let after = times.firstIndex(atOrAfter: t)
        return [after - 2, after - 1, after, after + 1].filter { times.indices.contains($0) }.map { times[$0] }
    }

    mutating func placeEdges() {
        var unplaced: [Int] = []
        for i in segments.indices {
            let (start, end) = (segments[i].start, segments[i].end)
            guard !pauses.keepsWhole(start) || !pauses.keepsWhole(end) else { continue }
            var best: (start: Double, end: Double, change: Double)?
            for s in choices(start) {
                for e in choices(end) where fits(s, e, i) {
                    let change = abs(s - start) + abs(e - end)
                    if best == nil || change < best!.change - 1e-9 { best = (s, e, change) }
                }
            }
            let window =
                best.map { ($0.start, $0.end) }
                ?? SegmentSelector.window(among: points, in: bounds(i), lengths: lengths(i), near: segments[i].duration, score: score)
            guard let (s, e) = window else {
                unplaced.append(i)
                continue
            }
            moved += (s != start ? 1 : 0) + (e != end ? 1 : 0)
            place(i, s, e)
        }
        // No pause around it fits a segment: it is left out (while others remain), and the total
        // made up later.
        if unplaced.count < segments.count {
            for i in unplaced.reversed() { segments.remove(at: i) }
        }
    }

    // MARK: 2. The total, a segment at a time

    /// A change to one segment: a new window, or leaving it out (`window` nil). `rank` is how far
    /// the total then lands from the target, rounded so that a better score wins a near tie.
    private struct Move {
        var rank: Double
        var score: Double
        var index: Int
        var window: (start: Double, end: Double)?

        func beats(_ other: Move?) -> Bool {
            guard let other else { return true }
            return rank < other.rank - 1e-9 || (abs(rank - other.rank) <= 1e-9 && score > other.score)
        }
    }

    /// The best move of segment `i` to a window between points that brings `total` nearer `target`:
    /// one between its neighbours that still holds part of it or, `elsewhere`, one anywhere that
    /// overlaps no other segment and shows no scene already shown. Misses are rounded to a
    /// twentieth of a second near the segment, to a quarter elsewhere (where the score weighs more).
    private func bestWindow(for i: Int, target: Double, total: Double, elsewhere: Bool) -> Move? {
        let segment = segments[i], rest = total - segment.duration, now = abs(target - total)
        let quantum = elsewhere ? 0.25 : 0.05
        let range = elsewhere ? 0...analysis.info.duration : bounds(i)
        let others = elsewhere ? segments.indices.filter { $0 != i }.map { segments[$0] } : []
        let allowed = lengths(i)
        let inside = times.filter { range.contains($0) }
        var best: Move?
        for (k, s) in inside.enumerated() {
            for e in inside[(k + 1)...] {
                let length = e - s
                if length > allowed.upperBound + 1e-9 { break }
                guard length >= allowed.lowerBound - 1e-9 else { continue }
                let miss = abs(target - (rest + length))
                guard miss < now - 1e-6 else { continue }
                let rank = (miss / quantum).rounded() * quantum
                if let best, rank > best.rank + 1e-9 { continue }
                if elsewhere {
                    let candidate = Segment(
                        start: s, end: e, score: 0, reasons: [],
                        shot: SegmentSelector.shot(containing: s, e, in: analysis.shots))
                    guard !others.contains(where: { s < $0.end + spacing($0, candidate) && $0.start < e + spacing($0, candidate) }),
                        !others.contains(where: { SegmentSelector.isRepeat(candidate, of: $0, in: analysis) })
                    else { continue }
                } else {
                    guard s < segment.end, e > segment.start, s != segment.start || e != segment.end else { continue }
                }
                let move = Move(rank: rank, score: score(s, e), index: i, window: (s, e))
                if move.beats(best) { best = move }
            }
        }
        return best
    }

    /// The best pair of changes where no single one will do: segment `left` left out, and another
    /// moved to a window elsewhere (its `Move`, an index into the segments once `left` is gone).
    private func bestExchange(target: Double, total: Double) -> (left: Int, move: Move)? {
        guard segments.count > 2 else { return nil }
        var best: (left: Int, move: Move)?
        for left in segments.indices {
            var without = self
            without.segments.remove(at: left)
            let rest = total - segments[left].duration
            for j in without.segments.indices {
                guard let move = without.bestWindow(for: j, target: target, total: rest, elsewhere: true) else { continue }
                // Only a pair that lands nearer the target than where it stands now.
                guard let (s, e) = move.window, abs(target - (rest - without.segments[j].duration + e - s)) < abs(target - total) - 0.05 else {
                    continue
                }
                if move.beats(best?.move) { best = (left, move) }
            }
        }
        return best
    }

    /// Brings the total to `target`, a segment at a time, by the move that lands closest (the
    /// best-scoring window wins a tie): a segment moves to another window between points near it
    /// (an edge or both step in or out, or it slides along), or one is left out. While the total
    /// is still further than the tolerance, a segment may also give way to a window elsewhere.
    mutating func bringTotal(to target: Double) {
        var total = self.total
        while abs(target - total) > 0.1 {
            var best: Move?
            for i in segments.indices {
                if let move = bestWindow(for: i, target: target, total: total, elsewhere: false), move.beats(best) { best = move }
                let rest = total - segments[i].duration
                if segments.count > 1, abs(target - rest) < abs(target - total) - 1e-6 {
                    let leaveOut = Move(rank: (abs(target - rest) * 20).rounded() / 20, score: -.infinity, index: i, window: nil)
                    if leaveOut.beats(best) { best = leaveOut }
                }
            }
            let tolerance = SegmentSelector.tolerance
            if abs(target - total) > tolerance, (best?.rank ?? .infinity) > tolerance {
                for i in segments.indices {
                    if let move = bestWindow(for: i, target: target, total: total, elsewhere: true), move.beats(best) { best = move }
                }
            }
            // Still beyond the tolerance: two segments give way to one window elsewhere (sentences
            // kept whole make the lengths coarse, and one move at a time may not reach the target).
            if abs(target - total) > tolerance, (best?.rank ?? .infinity) > tolerance,
                let (left, move) = bestExchange(target: target, total: total), move.beats(best)
            {
                total -= segments[left].duration
                segments.remove(at: left)
                best = move
            }
            guard let move = best else { break }
            if let (s, e) = move.window {
                total += (e - s) - segments[move.index].duration
                let near = s < segments[move.index].end && e > segments[move.index].start
                place(move.index, s, e)
                segments[move.index].score = score(s, e)
                if !near {
                    segments[move.index].reasons = SegmentSelector.reasons(for: segments[move.index], in: analysis, newCoverage: false)
                }
                segments.sort { $0.start < $1.start }
            } else {
                total -= segments[move.index].duration
                segments.remove(at: move.index)
            }
        }
    }

    // MARK: 3. Sliding inside pauses

    /// Edges slide inside their pauses (never off a cut, nor to within half a second of one),
    /// growing the best segments first or shrinking the weakest, until the total is within a
    /// twentieth of a second of `target`.
    mutating func slideEdges(toward target: Double) {
        var total = self.total
        let cuts = analysis.shots.dropFirst().map(\.start)
        let byScore = segments.indices.sorted { segments[$0].score > segments[$1].score }
        for i in total < target ? byScore : byScore.reversed() where abs(target - total) > 0.05 {
            for isEnd in [true, false] where abs(target - total) > 0.05 {
                let delta = target - total
                let edge = isEnd ? segments[i].end : segments[i].start
                guard !cuts.contains(where: { abs($0 - edge) < 1e-3 }), var room = pauses.pause(around: edge) else { continue }
                for cut in cuts where room.contains(cut) {
                    room =
                        cut < edge
                        ? max(room.lowerBound, cut + 0.5)...max(room.upperBound, cut + 0.5)
                        : min(room.lowerBound, cut - 0.5)...min(room.upperBound, cut - 0.5)
                }
                guard room.contains(edge) else { continue }
                let b = bounds(i), l = lengths(i)
                // Growing moves the end later or the start earlier; shrinking the reverse.
                let later = (delta > 0) == isEnd
                let reach =
                    later
                    ? min(room.upperBound, isEnd ? b.upperBound : .infinity) - edge
                    : edge - max(room.lowerBound, isEnd ? -.infinity : b.lowerBound)
                let lengthRoom = delta > 0 ? l.upperBound - segments[i].duration : segments[i].duration - l.lowerBound
                let step = max(0, min(abs(delta), reach, lengthRoom))
                guard step > 1e-6 else { continue }
                let slid = edge + (later ? step : -step)
                if isEnd { place(i, segments[i].start, slid) } else { place(i, slid, segments[i].end) }
                total += delta > 0 ? step : -step
            }
        }
    }

    // MARK: 4. Filling

    /// While the total is short of `target` by more than the tolerance: a new segment between
    /// points in the largest free stretch that holds one.
    mutating func fill(to target: Double) {
        var total = self.total
        let tolerance = SegmentSelector.tolerance, duration = analysis.info.duration
        while target - total > tolerance, segments.count < rules.count ?? .max {
            var free: [ClosedRange<Double>] = []
            var previous = 0.0
            for segment in segments {
                if segment.start - 0.25 > previous + 0.25 { free.append((previous == 0 ? 0 : previous + 0.25)...(segment.start - 0.25)) }
                previous = segment.end
            }
            if duration > previous + 0.25 { free.append((previous == 0 ? 0 : previous + 0.25)...duration) }
            let delta = target - total
            let wanted = min(max(delta, rules.shortest), rules.longest)
            let lengths = rules.shortest...max(rules.shortest, min(rules.longest, delta + tolerance))
            let found = free.sorted { $0.upperBound - $0.lowerBound > $1.upperBound - $1.lowerBound }.lazy.compactMap { [points, analysis] stretch in
                SegmentSelector.window(
                    among: points, in: stretch, lengths: lengths, near: wanted,
                    score: { SegmentSelector.meanScore(analysis, $0, $1) })
            }.first
            guard let (start, end) = found else { break }
            let added = Segment(
                start: start, end: end, score: score(start, end), reasons: ["fills the highlight"],
                shot: SegmentSelector.shot(containing: start, end, in: analysis.shots))
            segments.insert(added, at: segments.firstIndex { $0.start > start } ?? segments.count)
            total += added.duration
        }
    }
}

extension SegmentSelector {
    /// Puts every edge of `segments` on one of `points` and brings the total back to `target`
    /// (`PauseFit`'s four steps). Returns the segments and how many edges moved out of speech.
    static func placeEdgesInPauses(
        _ segments: [Segment], pauses: SpeechPauses, points: [EdgePoint], analysis: Analysis,
        target: Double?, rules: SegmentRules
    ) -> (segments: [Segment], moved: Int) {
        guard !pauses.isEmpty, !segments.isEmpty, !points.isEmpty else { return (segments, 0) }
        var fit = PauseFit(segments, pauses: pauses, points: points, analysis: analysis, rules: rules)
        fit.placeEdges()
        if let target {
            fit.bringTotal(to: target)
            fit.slideEdges(toward: target)
            fit.fill(to: target)
        }
        return (fit.segments, fit.moved)
    }
}
