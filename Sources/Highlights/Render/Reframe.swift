import Foundation
import Media
import MomentsModel
import MomentsSupport

/// Where the crop window of a highlight cut to another shape (9:16 of a landscape clip) is at each
/// moment: a window of one size, sliding along one axis of the stored picture, per segment.
struct CropPlan: Sendable {
    /// The window's size in stored pixels (even).
    let width: Int
    let height: Int
    /// The stored picture's size.
    let frameWidth: Int
    let frameHeight: Int
    /// Whether the window slides along x (a narrower shape) or y (a wider one).
    let horizontal: Bool
    var tracks: [Track]

    /// One segment's path: the window's offset along the sliding axis (stored pixels) at times (source seconds).
    struct Track: Sendable {
        var start: Double
        var end: Double
        var times: [Double]
        var offsets: [Double]
    }

    /// The sliding axis's length and the window's length along it.
    var axis: (length: Int, window: Int) { horizontal ? (frameWidth, width) : (frameHeight, height) }

    /// The window's top-left corner at `time` (stored pixels, even): interpolated along its
    /// segment's path, held at the ends.
    func window(at time: Double) -> (x: Int, y: Int) {
        let offset = self.offset(at: time)
        let even = min(max(0, Int(saturating: offset / 2) * 2), (axis.length - axis.window) / 2 * 2)
        return horizontal ? (even, (frameHeight - height) / 4 * 2) : ((frameWidth - width) / 4 * 2, even)
    }

    func offset(at time: Double) -> Double {
        let centre = Double(axis.length - axis.window) / 2
        guard let track = tracks.min(by: { Self.distance(time, $0) < Self.distance(time, $1) }), !track.times.isEmpty else { return centre }
        let times = track.times
        if time <= times[0] { return track.offsets[0] }
        if time >= times[times.count - 1] { return track.offsets[times.count - 1] }
        var lo = 0, hi = times.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if times[mid] <= time { lo = mid } else { hi = mid }
        }
        let f = (time - times[lo]) / max(1e-9, times[hi] - times[lo])
        return track.offsets[lo] + (track.offsets[hi] - track.offsets[lo]) * f
    }

    static func distance(_ time: Double, _ track: Track) -> Double {
        time < track.start ? track.start - time : time > track.end ? time - track.end : 0
    }

    /// The window at each planned moment in display coordinates (the picture upright), for the report.
    func path(rotation: Int) -> [HighlightReport.Reframe.Point] {
        tracks.flatMap { track in
            track.times.map { time -> HighlightReport.Reframe.Point in
                let (x, y) = window(at: time)
                let shown = Self.display(
                    x: x, y: y, width: width, height: height, frameWidth: frameWidth, frameHeight: frameHeight,
                    rotation: rotation)
                return .init(time: time, x: shown.x, y: shown.y)
            }
        }
    }

    /// A stored-orientation rectangle as the viewer sees it once the picture is turned upright.
    static func display(
        x: Int, y: Int, width: Int, height: Int, frameWidth: Int, frameHeight: Int,
        rotation: Int
    ) -> (x: Int, y: Int, width: Int, height: Int) {
        switch (rotation % 360 + 360) % 360 {
        case 90: (frameHeight - y - height, x, height, width)
        case 180: (frameWidth - x - width, frameHeight - y - height, width, height)
        case 270: (y, frameWidth - x - width, height, width)
        default: (x, y, width, height)
        }
    }
}

/// Plans the crop window of a highlight in another shape so that it follows where the action is.
///
/// Every frame of each segment is decoded and shrunk to a grey picture 128 pixels wide. Against the
/// frame before, shifted by the camera's own move (the best of a small search), what still changed
/// is the action; a picture region much brighter than the rest counts too (a subject standing
/// still). Their spread along the window's sliding axis gives the subject's position in the frame,
/// where it stands out; otherwise the last one holds. The window's path is then made steady: a shot
/// whose subject hardly moves gets a window that does not move; otherwise the positions are
/// smoothed without lag (a Gaussian over about half a second, the ends extended along their trend)
/// and held to keep the subject inside the window's middle third, so a pan never cuts it in half.
final class Reframer {
    /// Width of the grey pictures the action is looked for in.
    static let probeWidth = 128
    /// Seconds of the smoothing Gaussian's standard deviation.
    static let smoothing = 0.4

    private let frames: VideoFrames
    private let analysis: Analysis
    let window: (width: Int, height: Int, horizontal: Bool)

    /// Nil when the source already has the shape (within 2 %): nothing to crop.
    init?(path: String, analysis: Analysis, aspect: AspectRatio, cancellation: CancellationFlag) throws {
        guard let window = Self.window(for: analysis.info, aspect: aspect) else { return nil }
        self.window = window
        frames = try VideoFrames(path: path, analysis: analysis, cancellation: cancellation)
        self.analysis = analysis
    }

    /// The window (stored pixels, even) that gives `aspect` once the picture is upright, and
    /// whether it slides along x; nil when the picture already has that shape.
    static func window(for info: MediaInfo, aspect: AspectRatio) -> (width: Int, height: Int, horizontal: Bool)? {
        guard let ratio = aspect.ratio, info.width > 0, info.height > 0 else { return nil }
        let sar = info.sampleAspectRatio > 0 ? info.sampleAspectRatio : 1
        let (w, h) = (Double(info.width), Double(info.height))
        let upright = info.rotation % 180 == 0
        // The shown width over height, and whether the stored x axis is the shown x axis.
        let shown = upright ? w * sar / h : h / (w * sar)
        func even(_ v: Double) -> Int { max(2, Int(v / 2) * 2) }
        if abs(shown - ratio) / ratio < 0.02 { return nil }
        if shown > ratio {
            // Too wide as shown: narrow the shown width (stored x when upright, stored y when turned).
            return upright ? (even(ratio * h / sar), info.height, true) : (info.width, even(ratio * w * sar), false)
        }
        // Too tall as shown: lower the shown height.
        return upright ? (info.width, even(w * sar / ratio), false) : (even(h / (ratio * sar)), info.height, true)
    }

    /// The share of the rendering stage that planning takes: it decodes the segments' pictures as
    /// the render does again, but neither scales them to the output's size nor encodes them
    /// (docs/engine.md, reframing).
    static let progressShare = 0.4

    /// Plans the window over `segments`, reporting the rendering stage's 0…1 as their pictures
    /// are read (the caller gives planning its part of the stage, `progressShare`).
    func plan(_ segments: [Segment], reporter: ProgressReporter) throws -> CropPlan {
        let info = analysis.info
        let total = max(segments.reduce(0) { $0 + $1.duration }, 1e-6)
        var planned = 0.0
        let (length, span) = window.horizontal ? (info.width, window.width) : (info.height, window.height)
        let probeHeight = max(2, Int((Double(Self.probeWidth) * Double(info.height) / Double(info.width)) / 2) * 2)
        let scaler = Scaler(width: Self.probeWidth, height: probeHeight, format: .gray8, filter: .fast)
        var tracks: [CropPlan.Track] = []
        for segment in segments {
            var samples: [(time: Double, position: Double?)] = []
            var previous: [UInt8]?
            try frames.decode(from: segment.start) { decoded, t in
                if t < segment.start - 1e-6 { return true }
                if t >= segment.end - 1e-6 { return false }
                try reporter.report(.rendering, (planned + t - segment.start) / total)
                let grey = Self.pixels(try scaler.scaled(decoded))
                samples.append(
                    (
                        t,
                        Self.position(
                            grey, previous: previous, width: Self.probeWidth, height: probeHeight,
                            horizontal: window.horizontal)
                    ))
                previous = grey
                return true
            }
            var positions = Self.steady(
                samples.map(\.position), times: samples.map(\.time),
                windowFraction: Double(span) / Double(length))
            // The people in the segment stay in the picture, wherever the action is.
            let faces = analysis.seconds(overlapping: segment.start, segment.end).indices.flatMap {
                analysis.faces.indices.contains($0) ? analysis.faces[$0] : []
            }
            if let keep = Self.centres(keeping: faces, horizontal: window.horizontal, windowFraction: Double(span) / Double(length)) {
                positions = positions.map { min(max($0, keep.lowerBound), keep.upperBound) }
            }
            let offsets = positions.map { min(max(0, $0 * Double(length) - Double(span) / 2), Double(length - span)) }
            tracks.append(.init(start: segment.start, end: segment.end, times: samples.map(\.time), offsets: offsets))
            planned += segment.duration
            try reporter.report(.rendering, planned / total)
        }
        return CropPlan(
            width: window.width, height: window.height, frameWidth: info.width, frameHeight: info.height,
            horizontal: window.horizontal, tracks: tracks)
    }

    /// Where the window's centre (a fraction along the sliding axis) may be so that `faces` stay
    /// inside it: all of them where they fit in the window together, else the largest (centred
    /// on it when even it is wider than the window); nil without faces.
    static func centres(keeping faces: [FaceBox], horizontal: Bool, windowFraction: Double) -> ClosedRange<Double>? {
        func span(_ f: FaceBox) -> (low: Double, high: Double) { horizontal ? (f.x, f.x + f.width) : (f.y, f.y + f.height) }
        guard let largest = faces.max(by: { $0.size < $1.size }) else { return nil }
        let half = windowFraction / 2
        let all = (low: faces.map { span($0).low }.min()!, high: faces.map { span($0).high }.max()!)
        let kept = all.high - all.low <= windowFraction ? all : span(largest)
        guard kept.high - kept.low <= windowFraction else {
            let middle = (kept.low + kept.high) / 2
            return middle...middle
        }
        let low = max(half, kept.high - half), high = min(1 - half, kept.low + half)
        return low <= high ? low...high : nil
    }

    static func pixels(_ frame: Frame) -> [UInt8] {
        let (data, stride) = frame.plane(0)
        var out = [UInt8](repeating: 0, count: frame.width * frame.height)
        for row in 0..<frame.height {
            for column in 0..<frame.width { out[row * frame.width + column] = data[row * stride + column] }
        }
        return out
    }

    /// Where the action is in one grey picture, as a fraction (0…1) along the sliding axis; nil
    /// when nothing stands out.
    static func position(_ grey: [UInt8], previous: [UInt8]?, width: Int, height: Int, horizontal: Bool) -> Double? {
        var interest = [Double](repeating: 0, count: width * height)
        // Brightness that stands far out of the picture: a subject at rest.
        let mean = Double(grey.reduce(0) { $0 + Int($1) }) / Double(grey.count)
        let spread = (grey.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(grey.count)).squareRoot()
        let bright = mean + 2 * spread
        for i in grey.indices where Double(grey[i]) > bright { interest[i] += 0.5 * (Double(grey[i]) - bright) }
        if let previous {
            // What changed once the camera's own move (the best whole-pixel shift) is taken out.
            let (dx, dy) = cameraShift(grey, previous, width: width, height: height)
            for y in max(0, dy)..<min(height, height + dy) {
                for x in max(0, dx)..<min(width, width + dx) {
                    let change = abs(Int(grey[y * width + x]) - Int(previous[(y - dy) * width + (x - dx)]))
                    if change > 12 { interest[y * width + x] += Double(change) }
                }
            }
        }
        let count = horizontal ? width : height
        var profile = [Double](repeating: 0, count: count)
        for y in 0..<height {
            for x in 0..<width { profile[horizontal ? x : y] += interest[y * width + x] }
        }
        let average = profile.reduce(0, +) / Double(count)
        let deviation = (profile.reduce(0.0) { $0 + ($1 - average) * ($1 - average) } / Double(count)).squareRoot()
        let floor = average + deviation
        var sum = 0.0, weighted = 0.0
        for (i, value) in profile.enumerated() where value > floor {
            sum += value - floor
            weighted += (value - floor) * (Double(i) + 0.5)
        }
        // Too little stands out (a flat or still picture): no opinion.
        // (at least 4 above the floor per line across the axis; below that it is noise and grain).
        guard sum > Double(horizontal ? height : width) * 4 else { return nil }
        return weighted / sum / Double(count)
    }

    /// The whole-pixel shift (within ±6 across, ±3 down) that best lines `previous` up with `current`.
    static func cameraShift(_ current: [UInt8], _ previous: [UInt8], width: Int, height: Int) -> (Int, Int) {
        func cost(_ dx: Int, _ dy: Int) -> Double {
            var total = 0, n = 0
            var y = max(0, dy) + 1
            while y < min(height, height + dy) - 1 {
                var x = max(0, dx) + 1
                while x < min(width, width + dx) - 1 {
                    total += abs(Int(current[y * width + x]) - Int(previous[(y - dy) * width + (x - dx)]))
                    n += 1
                    x += 2
                }
                y += 2
            }
            return n > 0 ? Double(total) / Double(n) : .infinity
        }
        let dx = (-6...6).min { cost($0, 0) < cost($1, 0) } ?? 0
        let dy = (-3...3).min { cost(dx, $0) < cost(dx, $1) } ?? 0
        return (dx, dy)
    }

    /// The window's centre over one segment (fractions along the axis) from the subject's
    /// positions: gaps held, steady when the subject hardly moves, else smoothed without lag and
    /// kept within a sixth of the window of the subject (its middle third).
    static func steady(_ raw: [Double?], times: [Double], windowFraction: Double) -> [Double] {
        guard !raw.isEmpty else { return [] }
        let half = windowFraction / 2
        // Gaps: the last position seen (before the first, the first seen; none at all: the middle).
        var held = [Double](repeating: 0.5, count: raw.count)
        var last = raw.first { $0 != nil }.flatMap { $0 } ?? 0.5
        for (i, value) in raw.enumerated() {
            if let value { last = value }
            held[i] = last
        }
        // A running median over about a third of a second drops a frame's stray reading.
        let step = times.count > 1 ? max(1e-3, (times[times.count - 1] - times[0]) / Double(times.count - 1)) : 1.0 / 30
        let reachAround = max(1, Int(saturating: (0.15 / step).rounded()))
        let filled = held.indices.map { i -> Double in
            let near = held[max(0, i - reachAround)...min(held.count - 1, i + reachAround)].sorted()
            return near[near.count / 2]
        }
        func clampToFrame(_ v: Double) -> Double { min(max(v, half), 1 - half) }
        let target = filled.map(clampToFrame)
        // A subject that stays within a tenth of the window: a locked-off window.
        let sorted = target.sorted()
        let low = sorted[sorted.count / 10], high = sorted[(sorted.count * 9) / 10]
        if high - low < windowFraction * 0.1 {
            let median = sorted[sorted.count / 2]
            return [Double](repeating: median, count: target.count)
        }
        var path = gaussian(target, sigma: smoothing / step)
        // The subject's middle third: the window's centre within a sixth of a window of it.
        let reach = windowFraction / 6
        for _ in 0..<3 {
            path = zip(path, filled).map { clampToFrame(min(max($0, $1 - reach), $1 + reach)) }
            path = gaussian(path, sigma: 0.1 / step)
        }
        return zip(path, filled).map { clampToFrame(min(max($0, $1 - reach), $1 + reach)) }
    }

    /// A Gaussian blur of `values` (standard deviation `sigma` samples), the ends extended along
    /// the trend of their last half-second, so a steady move is followed without lag.
    static func gaussian(_ values: [Double], sigma: Double) -> [Double] {
        let n = values.count
        guard n > 2, sigma > 0.3 else { return values }
        let radius = Int(saturating: (3 * sigma).rounded(.up))
        let edge = max(2, min(n, Int(saturating: sigma * 1.25)))
        func trend(_ slice: ArraySlice<Double>) -> Double {
            let xs = slice.indices.map(Double.init), ys = Array(slice)
            let mx = xs.reduce(0, +) / Double(xs.count), my = ys.reduce(0, +) / Double(ys.count)
            let num = zip(xs, ys).reduce(0.0) { $0 + ($1.0 - mx) * ($1.1 - my) }
            let den = xs.reduce(0.0) { $0 + ($1 - mx) * ($1 - mx) }
            return den > 0 ? num / den : 0
        }
        let startSlope = trend(values[0..<edge]), endSlope = trend(values[(n - edge)..<n])
        func value(_ i: Int) -> Double {
            if i < 0 { return values[0] + startSlope * Double(i) }
            if i >= n { return values[n - 1] + endSlope * Double(i - n + 1) }
            return values[i]
        }
        let weights = (-radius...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = weights.reduce(0, +)
        return (0..<n).map { i in
            var sum = 0.0
            for (k, w) in weights.enumerated() { sum += w * value(i + k - radius) }
            return sum / total
        }
    }
}
