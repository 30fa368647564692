import Foundation

/// One cut between segments (or the highlight's end) moved onto the music.
public struct BeatCut: Sendable, Codable, Equatable {
    /// Highlight seconds where the cut falls.
    public var time: Double
    /// How far the segment's end moved in the source for it, in seconds (+ later, − earlier).
    public var moved: Double
    /// Whether it falls on a bar's first beat.
    public var downbeat: Bool
    /// False when no beat was within the segment's reach: the cut stays where the selection put it.
    public var onBeat: Bool

    enum CodingKeys: String, CodingKey { case time, moved, downbeat, onBeat = "on_beat" }
}

/// Moves the selection's cuts onto the music's beat. What is shown, and in which order, stays the
/// selection's; only where each segment ends moves, to a beat near where the selection ended it
/// (counted on the highlight's clock, so the total stays on the target), inside its shot and
/// clear of the other chosen moments; a segment that must grow past its shot's end starts earlier. A segment of a bar or more prefers to end on a bar's first beat,
/// so it spans whole bars; an end that would cut speech counts as two beats further away. The last
/// segment ends on a bar's end within `tolerance` of the target when there is one, else on the
/// beat nearest it. The cuts are chosen together (least total cost), not one by one. The music starts on a downbeat at the highlight's start, so segment ends are
/// beats on its clock; ends are not snapped to pictures: the last picture is held to the beat.
enum BeatFit {
    /// How far the total may be from the target.
    static let tolerance = 0.5

    struct Result {
        var segments: [Segment]
        var cuts: [BeatCut]
    }

    /// `bounds[i]`: the source times segment `i` may span (it grows at its end, then, at that
    /// bound, at its start). `shortest`: the least a segment keeps. `allows`: whether a source time
    /// is a fine place for an edge (not inside speech).
    /// `pictures`: the source's picture times, so that a start that moves is on a picture.
    static func fit(
        _ segments: [Segment], plan: MusicPlan, target: Double, bounds: [ClosedRange<Double>], shortest: Double,
        pictures: [Double] = [], allows: (Double) -> Bool = { _ in true }
    ) -> Result {
        guard plan.mode != .free, !segments.isEmpty, plan.beats.count >= 2 else { return unmoved(segments) }
        let period = plan.beatPeriod ?? zip(plan.beats, plan.beats.dropFirst()).map { $1 - $0 }.sorted()[plan.beats.count / 2 - 1]
        let bar = 4 * period
        let downbeats = Set(plan.downbeats.map { Int(($0 * 1000).rounded()) })
        func isDownbeat(_ t: Double) -> Bool { downbeats.contains(Int((t * 1000).rounded())) }
        let natural = segments.reduce(0) { $0 + $1.duration }
        let goal = min(target, natural + tolerance)

        // Dynamic programming over the cuts: cut i may fall on any beat within `reach` of where the
        // selection ended segment i (on the highlight's clock); the path of least cost wins, so one
        // cut's pull toward a bar is paid back by the next and the last lands on the target.
        let reach = max(3.0, 2 * period)
        var wanted: [Double] = []
        for segment in segments { wanted.append((wanted.last ?? 0) + segment.duration) }
        wanted[wanted.count - 1] = goal
        let options: [[Double]] = wanted.map { w in plan.beats.filter { abs($0 - w) <= reach } }
        // best[i][k]: least cost of cuts 0...i with cut i on options[i][k], and the option before.
        var best: [[(cost: Double, from: Int)]] = []
        for i in segments.indices {
            let segment = segments[i]
            let last = i == segments.count - 1
            let keep = min(shortest, segment.duration)
            var row: [(cost: Double, from: Int)] = []
            for b in options[i] {
                var c = abs(b - wanted[i])
                if last {
                    // Off the target: the nearest total first (ten a second), then the cuts.
                    if abs(b - goal) > tolerance { c += 100 + 10 * abs(b - goal) }
                    if isDownbeat(b) && abs(b - goal) <= tolerance { c -= period }
                }
                var chosen = (cost: Double.infinity, from: -1)
                let previous: [(Double, Int, Double)] =
                    i == 0
                    ? [(0, -1, 0)]
                    : options[i - 1].indices.compactMap { k in
                        best[i - 1][k].cost.isFinite ? (options[i - 1][k], k, best[i - 1][k].cost) : nil
                    }
                for (before, k, soFar) in previous {
                    let length = b - before
                    guard length >= keep - 1e-9, length <= bounds[i].upperBound - bounds[i].lowerBound + 1e-9 else { continue }
                    let span = Self.span(segment, length: length, within: bounds[i], pictures: pictures)
                    guard span.upperBound <= bounds[i].upperBound + 1e-9 else { continue }
                    var step = c
                    if !allows(span.upperBound) || (span.lowerBound != segment.start && !allows(span.lowerBound)) { step += 2 * period }
                    if !last && isDownbeat(b) && length >= bar - period / 2 { step -= period }
                    if soFar + step < chosen.cost { chosen = (soFar + step, k) }
                }
                row.append(chosen)
            }
            best.append(row)
        }
        guard let end = best.last?.indices.filter({ best.last![$0].cost.isFinite }).min(by: { best.last![$0].cost < best.last![$1].cost }) else {
            // No beat path within reach (shots too short to move the ends): the cuts stay.
            return unmoved(segments)
        }
        var times = [Double](repeating: 0, count: segments.count)
        var k = end
        for i in segments.indices.reversed() {
            times[i] = options[i][k]
            k = best[i][k].from
        }
        var result: [Segment] = [], cuts: [BeatCut] = []
        var elapsed = 0.0
        for ((segment, time), bound) in zip(zip(segments, times), bounds) {
            var moved = segment
            let span = Self.span(segment, length: time - elapsed, within: bound, pictures: pictures)
            (moved.start, moved.end) = (span.lowerBound, span.upperBound)
            result.append(moved)
            cuts.append(BeatCut(time: time, moved: moved.end - segment.end, downbeat: isDownbeat(time), onBeat: true))
            elapsed = time
        }
        return Result(segments: result, cuts: cuts)
    }

    /// The segments as they are, each cut where the selection put it, off the beat.
    static func unmoved(_ segments: [Segment]) -> Result {
        var elapsed = 0.0
        return Result(
            segments: segments,
            cuts: segments.map { s in
                elapsed += s.duration
                return BeatCut(time: elapsed, moved: 0, downbeat: false, onBeat: false)
            })
    }

    /// `segment` made `length` long: from its start where `bound` allows, else starting earlier,
    /// on the picture at or before `bound`'s end less `length` (so the segment's first picture
    /// shows from its first moment, not a fraction of a frame late).
    static func span(_ segment: Segment, length: Double, within bound: ClosedRange<Double>, pictures: [Double] = []) -> ClosedRange<Double> {
        if segment.start + length <= bound.upperBound { return segment.start...(segment.start + length) }
        var start = bound.upperBound - length
        let next = pictures.firstIndex(atOrAfter: start)
        if next < pictures.count, abs(pictures[next] - start) > 1e-6 { start = next > 0 ? pictures[next - 1] : start }
        start = max(bound.lowerBound, start)
        return start...(start + length)
    }

    /// Where each segment may grow to: its shot (the whole video for a segment across shots),
    /// short of the chosen moments before and after it in the source.
    static func bounds(_ segments: [Segment], shots: [Shot], duration: Double) -> [ClosedRange<Double>] {
        segments.map { segment in
            let shot = shots.indices.contains(segment.shot) ? shots[segment.shot] : Shot(start: 0, end: duration)
            var low = max(0, min(shot.start, segment.start)), high = min(duration, max(shot.end, segment.end))
            for other in segments where other != segment {
                if other.start >= segment.end - 1e-9 { high = min(high, other.start) }
                if other.end <= segment.start + 1e-9 { low = max(low, other.end) }
            }
            return low...max(low, high)
        }
    }
}
