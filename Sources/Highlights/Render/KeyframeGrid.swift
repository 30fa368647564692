import Media
import MomentsSupport

/// Where a stream can be cut without re-encoding: its random access points in decode order, each
/// with the time a segment that starts there first shows and the time a segment that ends just
/// before it last shows (times relative to the analysis origin, like every other time).
///
/// With closed GOPs both are the keyframe's own time. With open GOPs (HEVC CRA) a segment that
/// starts on the CRA drops the RASL pictures that lead it, and one that ends before it stops at
/// the first of those leading pictures, so a cut there loses the leading pictures' few frames.
struct KeyframeGrid: Sendable {
    struct Point: Sendable, Equatable {
        /// Index of the random access point in the packet index.
        var packet: Int
        /// First packet of the next GOP (or the end of the index).
        var gopEnd: Int
        /// The earliest time a segment starting here shows, and its timestamp.
        var start: Double
        var startTicks: Int64
        /// The time (and timestamp) a segment ending just before this point stops at.
        var end: Double
        var endTicks: Int64
    }

    let points: [Point]
    /// When the last frame stops showing.
    let streamEnd: Double
    let streamEndTicks: Int64

    /// Which packets a segment may start at.
    enum Starts {
        /// Random access points by their NAL units (IDR, CRA, BLA): where copied segments start.
        /// A segment starting at a CRA shows from its first picture that is not RASL.
        case randomAccessPoints
        /// Whatever the container marks as a keyframe: where a decoder can start for the encode
        /// path. A segment starting there shows from the keyframe itself.
        case keyframes
    }

    /// The grid of `index`'s random access points (or keyframes); nil when the stream does not
    /// start with one. `frameInterval` is the nominal frame duration in seconds (the last frame's length).
    init?(index: PacketIndex, origin: Double, frameInterval: Double, starts kind: Starts = .randomAccessPoints) {
        let entries = index.entries
        let starts = kind == .randomAccessPoints ? index.randomAccessPoints : index.keyframes
        guard let first = starts.first, first == 0 else { return nil }
        var points: [Point] = []
        points.reserveCapacity(starts.count)
        for (n, packet) in starts.enumerated() {
            let gopEnd = n + 1 < starts.count ? starts[n + 1] : entries.count
            var earliest = Int64.max, earliestKept = Int64.max
            for entry in entries[packet..<gopEnd] {
                earliest = min(earliest, entry.pts)
                if entry.kind != .rasl { earliestKept = min(earliestKept, entry.pts) }
            }
            if kind == .keyframes { earliestKept = entries[packet].pts }
            points.append(
                Point(
                    packet: packet, gopEnd: gopEnd,
                    start: index.seconds(earliestKept) - origin, startTicks: earliestKept,
                    end: index.seconds(earliest) - origin, endTicks: earliest))
        }
        let last = entries.map(\.pts).max() ?? 0
        let lastTicks = Int64(saturating: (frameInterval / index.secondsPerTick).rounded())
        self.points = points
        streamEndTicks = last.addingReportingOverflow(max(1, lastTicks)).overflow ? .max : last + max(1, lastTicks)
        streamEnd = index.seconds(streamEndTicks) - origin
    }

    var count: Int { points.count }

    /// When a segment ending just before point `i` stops (`i == count`: the end of the stream).
    func end(before i: Int) -> Double { i < points.count ? points[i].end : streamEnd }
    func endTicks(before i: Int) -> Int64 { i < points.count ? points[i].endTicks : streamEndTicks }

    /// The first packet after a segment that ends just before point `i` (`i == count`: the index's
    /// `packetCount`, its end).
    func packet(before i: Int, of packetCount: Int) -> Int { i < points.count ? points[i].packet : packetCount }

    /// The longest stretch between two random access points (and from the last to the end), seconds.
    var longestGOP: Double {
        var longest = 0.0
        for i in points.indices { longest = max(longest, end(before: i + 1) - points[i].start) }
        return longest
    }
}

/// A segment as copied: from random access point `first` to just before point `end`.
struct CopyRange: Sendable, Equatable {
    var first: Int
    var end: Int
}
