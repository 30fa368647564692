import Foundation

/// How far one segment's edges moved to land on keyframes (seconds; positive is later).
public struct EdgeMove: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
}

/// Segments placed on a keyframe grid, with what it took.
struct AlignedSelection {
    var segments: [Segment]
    var ranges: [CopyRange]
    var moves: [EdgeMove]
}

extension SegmentSelector {
    /// Moves every segment's edges onto `grid`: each starts on a random access point inside its shot
    /// (the first at or after the wanted start, else the last before it) and ends just before a
    /// later one, never showing a frame of another shot. Then, while the total is more than the
    /// tolerance off `target`, whole GOPs are added to or taken from the segments' edges (growing
    /// the best-scoring segments first, shrinking the weakest), each step the one that lands
    /// closest. Segments no GOP fits into are dropped.
    ///
    /// When the segments cannot grow enough inside their shots, a GOP of another stretch of a shot
    /// is added (the best-scoring by `score(start, end)`) and grown from there.
    ///
    /// Under user-chosen `rules`, no step makes a segment longer than `max_segment` or shorter than
    /// `min_segment` (unless it was already) by more than `slack` (a frame), or adds a segment past
    /// `max_segments`; whether the result keeps the rules is the caller's to check
    /// (`SegmentRules.admits`).
    ///
    /// `allows`: where an edge may fall (a keyframe in a pause, not inside an utterance); the grid's
    /// other points are not used.
    static func align(
        _ segments: [Segment], to grid: KeyframeGrid, shots: [Shot], target: Double?,
        rules: SegmentRules, slack: Double, allows: (Double) -> Bool = { _ in true },
        score: (Double, Double) -> Double
    ) -> AlignedSelection {
        let duration = grid.streamEnd
        func shot(_ index: Int) -> Shot {
            guard shots.indices.contains(index) else { return Shot(start: 0, end: duration) }
            // The last shot runs to the end of the last frame, which may be past the stated duration.
            return index == shots.count - 1 ? Shot(start: shots[index].start, end: max(duration, shots[index].end)) : shots[index]
        }
        func shot(of segment: Segment) -> Shot { shot(segment.shot) }
        let epsilon = 1e-6
        var kept: [(segment: Segment, original: Segment, range: CopyRange, shot: Shot)] = []
        for segment in segments.sorted(by: { $0.start < $1.start }) {
            let bounds = shot(of: segment)
            let inside = grid.points.indices.filter {
                grid.points[$0].start >= bounds.start - epsilon && grid.points[$0].start < bounds.end - epsilon && allows(grid.points[$0].start)
            }
            let after = inside.first { grid.points[$0].start >= segment.start - epsilon && grid.points[$0].start < segment.end - epsilon }
            guard let first = after ?? inside.last(where: { grid.points[$0].start < segment.start }) else { continue }
            let ends = (first + 1...grid.count).filter { grid.end(before: $0) <= bounds.end + epsilon && allows(grid.end(before: $0)) }
            guard let end = ends.min(by: { abs(grid.end(before: $0) - segment.end) < abs(grid.end(before: $1) - segment.end) }) else { continue }
            var placed = segment
            placed.start = grid.points[first].start
            placed.end = grid.end(before: end)
            kept.append((placed, segment, CopyRange(first: first, end: end), bounds))
        }
        // Two segments snapped into the same GOP: the earlier one ends where the later one starts.
        var i = 0
        while i + 1 < kept.count {
            if kept[i].range.end > kept[i + 1].range.first {
                if kept[i + 1].range.first > kept[i].range.first {
                    kept[i].range.end = kept[i + 1].range.first
                    kept[i].segment.end = grid.end(before: kept[i].range.end)
                } else {
                    kept.remove(at: kept[i].segment.score >= kept[i + 1].segment.score ? i + 1 : i)
                    continue
                }
            }
            i += 1
        }

        if let target {
            func length(_ r: CopyRange) -> Double { grid.end(before: r.end) - grid.points[r.first].start }
            var total = kept.reduce(0) { $0 + length($1.range) }
            // One GOP inside a shot, outside every segment: where a new segment could start.
            var openings: [(segment: Segment, range: CopyRange, shot: Shot)] = []
            for index in (shots.isEmpty ? [0] : Array(shots.indices)) {
                let bounds = shot(index)
                for i in grid.points.indices
                where grid.points[i].start >= bounds.start - epsilon
                    && grid.end(before: i + 1) <= bounds.end + epsilon && allows(grid.points[i].start) && allows(grid.end(before: i + 1))
                {
                    let start = grid.points[i].start, end = grid.end(before: i + 1)
                    openings.append(
                        (
                            Segment(start: start, end: end, score: score(start, end), reasons: ["fills the highlight"], shot: index),
                            CopyRange(first: i, end: i + 1), bounds
                        ))
                }
            }
            while abs(target - total) > tolerance {
                var best: (miss: Double, preference: Double, index: Int, range: CopyRange?)?
                func consider(_ index: Int, _ range: CopyRange?) {
                    let old = index < kept.count ? length(kept[index].range) : 0
                    if let range, !allows(grid.points[range.first].start) || !allows(grid.end(before: range.end)) { return }
                    let new = range.map(length) ?? 0
                    let miss = abs(target - (total - old + new))
                    guard miss < abs(target - total) - epsilon else { return }
                    if rules.capsEveryPass, new > old, new > rules.longest + slack { return }
                    if rules.floorIsPromise, range != nil, new < old, new < rules.shortest - slack { return }
                    if index >= kept.count, kept.count >= rules.count ?? .max { return }
                    // Grow what scores well, shrink what scores badly.
                    let preference =
                        index < kept.count
                        ? (new > old ? 1 : -1) * kept[index].segment.score
                        : openings[index - kept.count].segment.score - 0.1

                    if best == nil || miss < best!.miss - epsilon || (abs(miss - best!.miss) <= epsilon && preference > best!.preference) {
                        best = (miss, preference, index, range)
                    }
                }
                for (n, item) in kept.enumerated() {
                    let r = item.range
                    let previousEnd = n > 0 ? kept[n - 1].range.end : 0
                    let nextFirst = n + 1 < kept.count ? kept[n + 1].range.first : grid.count
                    if r.end + 1 <= nextFirst, grid.end(before: r.end + 1) <= item.shot.end + epsilon {
                        consider(n, CopyRange(first: r.first, end: r.end + 1))
                    }
                    if r.first - 1 >= previousEnd, grid.points[r.first - 1].start >= item.shot.start - epsilon {
                        consider(n, CopyRange(first: r.first - 1, end: r.end))
                    }
                    if r.end - 1 > r.first { consider(n, CopyRange(first: r.first, end: r.end - 1)) }
                    if r.first + 1 < r.end { consider(n, CopyRange(first: r.first + 1, end: r.end)) }
                    if kept.count > 1 { consider(n, nil) }
                }
                if total < target {
                    for (n, opening) in openings.enumerated()
                    where !kept.contains(where: { opening.range.first < $0.range.end && $0.range.first < opening.range.end }) {
                        consider(kept.count + n, opening.range)
                    }
                }
                guard let move = best else { break }
                if move.index >= kept.count {
                    let opening = openings[move.index - kept.count]
                    let at = kept.firstIndex { $0.range.first > opening.range.first } ?? kept.count
                    kept.insert((opening.segment, opening.segment, opening.range, opening.shot), at: at)
                    total += length(opening.range)
                    continue
                }
                total += (move.range.map(length) ?? 0) - length(kept[move.index].range)
                if let range = move.range {
                    kept[move.index].range = range
                    kept[move.index].segment.start = grid.points[range.first].start
                    kept[move.index].segment.end = grid.end(before: range.end)
                } else {
                    kept.remove(at: move.index)
                }
            }
        }
        return AlignedSelection(
            segments: kept.map(\.segment), ranges: kept.map(\.range),
            moves: kept.map { EdgeMove(start: $0.segment.start - $0.original.start, end: $0.segment.end - $0.original.end) })
    }
}
