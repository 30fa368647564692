import Foundation
import Media
import MomentsSupport

/// The still pictures of a highlight: a poster (the best-scoring picture the highlight shows that
/// is neither dark nor blurred) and a thumbnail strip (one picture per segment, left to right), as
/// JPEG, upright, at the highlight's own picture (tone-mapped when the source is HDR).
///
/// Candidates come from the analysis (the best usable seconds inside the segments); each is then
/// decoded and looked at, because a second's average can hide a fade to black or a whip pan. A
/// picture darker than `darkLuma` is never chosen while another candidate is not; among the rest,
/// the analysis's score and the picture's own sharpness decide.
final class Stills {
    struct Result {
        var poster: Data
        var posterTime: Double
        var posterSize: (width: Int, height: Int)
        var strip: Data
        var thumbnailTimes: [Double]
    }

    static let thumbnailHeight = HighlightReport.Stills.thumbnailHeight
    /// Mean luma (limited range, 16 black … 235 white) below which a picture counts as dark.
    static let darkLuma = 40.0
    /// How many candidates the poster looks at.
    static let posterCandidates = 6
    /// What a second that clearly shows a face (`SecondFeatures.faceClarity` 1) adds to its
    /// score as a poster: more than any difference of interest between two usable seconds.
    static let faceWeight = 1.0

    private let frames: VideoFrames
    private let analysis: Analysis
    private let geometry: OutputGeometry
    private let pictures: PicturePipeline
    private let cancellation: CancellationFlag

    /// `geometry` and `crop`: the highlight's, so the stills show what it shows.
    init(path: String, analysis: Analysis, geometry: OutputGeometry, crop: CropPlan? = nil, cancellation: CancellationFlag) throws {
        frames = try VideoFrames(path: path, analysis: analysis, cancellation: cancellation)
        self.analysis = analysis
        self.geometry = geometry
        self.cancellation = cancellation
        pictures = try PicturePipeline(geometry: geometry, info: analysis.info, crop: crop)
    }

    func make(_ segments: [Segment]) throws -> Result {
        let frame = 1 / max(1, analysis.info.frameRate)
        // Candidate times: each second the segments show, at its keyframe when it has one inside
        // the segment (the picture the analysis looked at, and one decode instead of a GOP's),
        // else its middle; best first.
        let keyframes = analysis.packets.keyframes.map { analysis.packets.seconds(analysis.packets.entries[$0].pts) - analysis.origin }.sorted()
        var candidates: [(time: Double, score: Double, segment: Int)] = []
        for (index, segment) in segments.enumerated() {
            // The pictures worth grabbing: a frame in from either edge, where the segment has room.
            let shown = Self.inner(segment, frame: frame)
            var found = false
            for second in analysis.seconds(overlapping: segment.start, segment.end) {
                // The part of this second the segment shows; a second it only touches (an edge a
                // frame past a whole second) offers no picture of its own.
                let lower = max(shown.lowerBound, second.time), upper = min(shown.upperBound, second.time + 1 - frame)
                guard lower <= upper else { continue }
                let time = Self.first(in: keyframes, within: lower...upper) ?? min(max(second.time + 0.5, lower), upper)
                // A clear face makes a poster: people first here too.
                candidates.append((time, (second.isUsable ? second.score : second.score - 10) + Self.faceWeight * second.faceClarity, index))
                found = true
            }
            if !found { candidates.append(((segment.start + segment.end) / 2, -20, index)) }
        }
        candidates.sort { ($0.score, -$0.time) > ($1.score, -$1.time) }

        var looked: [(time: Double, picture: Frame, look: Look, score: Double)] = []
        for candidate in candidates.prefix(Self.posterCandidates) {
            try cancellation.check()
            let picture = try grab(at: candidate.time)
            looked.append((candidate.time, picture, Look(picture), candidate.score))
        }
        let sharpest = max(looked.map(\.look.sharpness).max() ?? 1, 1e-6)
        // Dark loses to anything else; then the analysis's score, and the picture's own sharpness.
        guard
            let best = looked.max(by: { a, b in
                func value(_ c: (time: Double, picture: Frame, look: Look, score: Double)) -> Double {
                    (c.look.mean < Self.darkLuma ? -100 : 0) + c.score + 0.5 * c.look.sharpness / sharpest
                }
                return value(a) < value(b)
            })
        else { throw StillsError() }
        let upright =
            geometry.rotation % 180 == 0
            ? (geometry.scaledWidth, geometry.scaledHeight)
            : (geometry.scaledHeight, geometry.scaledWidth)
        let poster = try Self.jpeg(best.picture, geometry: geometry)

        // One picture per segment: its best candidate that is not dark.
        // At most four heights wide (a panorama's thumbnail is squeezed): the strip stays within
        // what a JPEG can be (65,535 pixels) and a bounded size, however many segments.
        let thumbWidth = min(
            HighlightReport.Stills.widestThumbnail,
            max(2, Int(saturating: (Double(Self.thumbnailHeight) * Double(upright.0) / Double(upright.1)) / 2) * 2))
        let strip = try Frame.video(width: thumbWidth * segments.count, height: Self.thumbnailHeight, format: .yuvj420p)
        let fitter = try FilterGraph(
            width: geometry.scaledWidth, height: geometry.scaledHeight, format: .yuv420p,
            description: Self.uprightChain(geometry) + "scale=\(thumbWidth):\(Self.thumbnailHeight):flags=bicubic:"
                + Self.toJFIF)
        var times: [Double] = []
        for index in segments.indices {
            try cancellation.check()
            let own = candidates.filter { $0.segment == index }
            var chosen: (time: Double, picture: Frame)?
            for candidate in own.prefix(3) {
                if let seen = looked.first(where: { $0.time == candidate.time }) {
                    chosen = (seen.time, seen.picture)
                } else {
                    chosen = (candidate.time, try grab(at: candidate.time))
                }
                if Look(chosen!.picture).mean >= Self.darkLuma { break }
            }
            guard let chosen else { continue }
            times.append(chosen.time)
            try fitter.filter(chosen.picture) { small in Self.copy(small, into: strip, x: thumbWidth * index) }
        }
        let stripJPEG = try Self.encodeJPEG(strip)
        return Result(poster: poster, posterTime: best.time, posterSize: upright, strip: stripJPEG, thumbnailTimes: times)
    }

    /// The picture shown at `time` (source seconds), prepared as the render prepares it.
    private func grab(at time: Double) throws -> Frame {
        // The picture on screen at `time` is the last one starting at or before it.
        var last: Frame?
        var found: Frame?
        try frames.decode(from: time) { decoded, t in
            if t <= time + 1e-6 {
                last = try decoded.clone()
                return true
            }
            found = try last ?? decoded.clone()
            return false
        }
        guard let picture = found ?? last else { throw StillsError() }
        return try pictures.prepare(picture, time: time)
    }

    /// The times of `segment` a picture may be taken from: one frame in from its start, two from
    /// its end (the last picture may be cut short by the next segment); its middle when it is
    /// shorter than that.
    static func inner(_ segment: Segment, frame: Double) -> ClosedRange<Double> {
        let first = segment.start + frame, last = segment.end - 2 * frame
        guard first <= last else { let middle = (segment.start + segment.end) / 2; return middle...middle }
        return first...last
    }

    /// The first of `sorted` inside `range`, if any.
    static func first(in sorted: [Double], within range: ClosedRange<Double>) -> Double? {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < range.lowerBound - 1e-6 { lo = mid + 1 } else { hi = mid }
        }
        return lo < sorted.count && sorted[lo] <= range.upperBound + 1e-6 ? sorted[lo] : nil
    }

    /// Turns stored-orientation pictures upright (a filter chain prefix, empty or ending in a comma).
    static func uprightChain(_ geometry: OutputGeometry) -> String {
        switch (geometry.rotation % 360 + 360) % 360 {
        case 90: "transpose=clock,"
        case 180: "hflip,vflip,"
        case 270: "transpose=cclock,"
        default: ""
        }
    }

    /// The scale options and format that turn the render's pictures (BT.709, limited range) into
    /// what JPEG readers assume (JFIF: BT.601 matrix, full range).
    static let toJFIF = "in_color_matrix=bt709:out_color_matrix=bt601:in_range=limited:out_range=full,format=yuvj420p"

    /// `picture` (stored orientation, the render's geometry) upright, as a JPEG.
    static func jpeg(_ picture: Frame, geometry: OutputGeometry) throws -> Data {
        let graph = try FilterGraph(
            width: geometry.scaledWidth, height: geometry.scaledHeight, format: .yuv420p,
            description: uprightChain(geometry) + "scale=" + toJFIF)
        var data = Data()
        try graph.filter(picture) { upright in data = try encodeJPEG(upright) }
        return data
    }

    /// One full-range 4:2:0 picture as a baseline JPEG (quality about 90).
    static func encodeJPEG(_ picture: Frame) throws -> Data {
        var settings = Encoder.Video(
            codec: "mjpeg", width: picture.width, height: picture.height, pixelFormat: .yuvj420p,
            timeBase: Rational(1, 25), frameRate: Rational(25, 1),
            options: ["flags": "+qscale", "global_quality": String(3 * 118)])
        settings.color = ColorDescription(primaries: .unspecified, transfer: .unspecified, space: .unspecified, range: .full)
        let encoder = try Encoder(video: settings, globalHeader: false)
        var data = Data()
        let frame = try picture.clone()
        frame.pts = 0
        try encoder.encode(frame) { data.append(contentsOf: $0.bytes) }
        try encoder.encode(nil) { data.append(contentsOf: $0.bytes) }
        return data
    }

    /// Copies `picture` (yuvj420p, even sizes) into `strip` with its left edge at `x` (even).
    static func copy(_ picture: Frame, into strip: Frame, x: Int) {
        for plane in 0..<3 {
            let (source, sourceStride) = picture.plane(plane)
            let (target, targetStride) = strip.plane(plane)
            let shift = plane == 0 ? 0 : 1
            let width = min(picture.width >> shift, (strip.width >> shift) - (x >> shift))
            for row in 0..<(min(picture.height, strip.height) >> shift) {
                (target + row * targetStride + (x >> shift)).update(from: source + row * sourceStride, count: width)
            }
        }
    }

    /// How a decoded picture looks: mean luma and edge strength.
    struct Look {
        var mean: Double
        /// Mean absolute Laplacian of the luma on a 2-pixel grid: high when sharp, low when blurred or flat.
        var sharpness: Double

        init(_ picture: Frame) {
            let (luma, stride) = picture.plane(0)
            let width = picture.width, height = picture.height
            var sum = 0, edges = 0, count = 0, samples = 0
            var row = 1
            while row < height - 1 {
                let line = luma + row * stride
                var column = 1
                while column < width - 1 {
                    let c = Int(line[column])
                    sum += c
                    samples += 1
                    edges += abs(4 * c - Int(line[column - 1]) - Int(line[column + 1]) - Int(line[column - stride]) - Int(line[column + stride]))
                    count += 1
                    column += 2
                }
                row += 2
            }
            mean = samples > 0 ? Double(sum) / Double(samples) : 0
            sharpness = count > 0 ? Double(edges) / Double(count) : 0
        }
    }

    struct StillsError: Error {}
}
