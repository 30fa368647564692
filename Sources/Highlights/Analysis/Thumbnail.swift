import Media

/// A tiny picture (fitted into 64 × 64 as displayed, full-resolution chroma) for comparing frames cheaply.
struct Thumbnail: Sendable {
    /// The box every thumbnail fits in, whatever the picture's shape.
    static let box = 64
    let width: Int
    let height: Int
    let y: [UInt8]
    let u: [UInt8]
    let v: [UInt8]

    var pixelCount: Int { y.count }

    /// Mean absolute difference over luma and both chroma planes (0…255 scale, summed): the
    /// "content value" of scene detectors. Hard cuts give 40+, steady shots a few units.
    func difference(to other: Thumbnail) -> Double {
        guard other.pixelCount == pixelCount else { return 255 }
        var dy = 0, dc = 0
        for i in 0..<pixelCount {
            dy += abs(Int(y[i]) - Int(other.y[i]))
            dc += abs(Int(u[i]) - Int(other.u[i])) + abs(Int(v[i]) - Int(other.v[i]))
        }
        return (Double(dy) + Double(dc)) / Double(pixelCount)
    }

    /// The change from this picture to `later`, shown `seconds` after it, per frame interval:
    /// a sample run's activity (a frame's motion, however far apart the two pictures lie).
    func activity(to later: Thumbnail, seconds: Double, frameInterval: Double) -> Double {
        difference(to: later) / max(1, abs(seconds) / frameInterval)
    }

    /// Colour histogram distance (0 same colours … 1 disjoint), blind to where things are, so a
    /// pan or shake within one scene scores low while a change of scene scores high.
    /// `aligningBrightness`: the luma histograms are compared as they are and with their means
    /// aligned, and the nearer comparison counts, so flicker or a light switched on moves nothing.
    func histogramDistance(to other: Thumbnail, aligningBrightness: Bool = false) -> Double {
        func distance(_ a: [UInt8], _ b: [UInt8], bins: Int, shift: Int = 0) -> Double {
            var ha = [Int](repeating: 0, count: bins), hb = [Int](repeating: 0, count: bins)
            for value in a { ha[Int(value) * bins / 256] += 1 }
            for value in b { hb[min(255, max(0, Int(value) + shift)) * bins / 256] += 1 }
            let total = Double(max(1, a.count))
            return zip(ha, hb).reduce(0.0) { $0 + Double(abs($1.0 - $1.1)) } / (2 * total)
        }
        guard other.pixelCount == pixelCount else { return 1 }
        var luma = distance(y, other.y, bins: 32)
        if aligningBrightness { luma = min(luma, distance(y, other.y, bins: 32, shift: Int((meanLuma - other.meanLuma).rounded()))) }
        return (luma + distance(u, other.u, bins: 16) + distance(v, other.v, bins: 16)) / 3
    }

    var meanLuma: Double { Double(y.reduce(0) { $0 + Int($1) }) / Double(max(1, pixelCount)) }

    /// A coarse colour layout (4×4 cells of Y, U, V means), for judging visual similarity of shots.
    var signature: [Float] {
        var cells = [Float](repeating: 0, count: 48)
        var counts = [Float](repeating: 0, count: 16)
        for row in 0..<height {
            for col in 0..<width {
                let cell = min(3, row * 4 / height) * 4 + min(3, col * 4 / width)
                let i = row * width + col
                cells[cell * 3] += Float(y[i])
                cells[cell * 3 + 1] += Float(u[i])
                cells[cell * 3 + 2] += Float(v[i])
                counts[cell] += 1
            }
        }
        for cell in 0..<16 where counts[cell] > 0 {
            for k in 0..<3 { cells[cell * 3 + k] /= counts[cell] }
        }
        return cells
    }
}

/// Makes thumbnails (and a sharpness measure) from decoded frames of any pixel format.
final class Thumbnailer {
    let width: Int
    let height: Int
    private let scaler: Scaler
    private let target: Frame
    private let detailScaler: Scaler
    private let detailTarget: Frame

    /// The size that fits a picture of `width` × `height` stored pixels of shape `sampleAspectRatio`
    /// into a `box` × `box` square as displayed, keeping its shape (each side at least 8, even).
    static func fitted(width: Int, height: Int, sampleAspectRatio: Double, box: Int) -> (width: Int, height: Int) {
        let shownWidth = Double(max(1, width)) * (sampleAspectRatio.isFinite && sampleAspectRatio > 0 ? sampleAspectRatio : 1)
        let shownHeight = Double(max(1, height))
        let scale = Double(box) / max(shownWidth, shownHeight)
        func side(_ v: Double) -> Int { max(8, min(box, Int((v * scale).rounded())) & ~1) }
        return (side(shownWidth), side(shownHeight))
    }

    /// An HDR source's tone mapping (the render's, with highlights clipped rather than rolled
    /// off): thumbnails hold its SDR picture, so brightness means the same in every source and a
    /// blend stays a straight one.
    private let toneMapper: ToneMapper?

    init(info: MediaInfo) throws {
        let (width, height, sampleAspectRatio) = (info.width, info.height, info.sampleAspectRatio)
        let transfer = info.isHDR ? info.colorTransfer.flatMap(ColorDescription.Transfer.init(name:)) : nil
        toneMapper = try transfer.map { try ToneMapper.shared(for: $0, highlights: .clipped) }
        (self.width, self.height) = Self.fitted(width: width, height: height, sampleAspectRatio: sampleAspectRatio, box: Thumbnail.box)
        scaler = Scaler(width: self.width, height: self.height, format: .yuv444p, filter: .area)
        target = try Frame.video(width: self.width, height: self.height, format: .yuv444p)
        // Sharpness on a grey picture of at most 320 × 320, never larger than the source.
        let detail = Self.fitted(width: width, height: height, sampleAspectRatio: sampleAspectRatio, box: min(320, max(width, height)))
        detailScaler = Scaler(width: detail.width, height: detail.height, format: .gray8, filter: .fast)
        detailTarget = try Frame.video(width: detail.width, height: detail.height, format: .gray8)
    }

    func thumbnail(of frame: Frame) throws -> Thumbnail {
        try scaler.scale(frame, into: target)
        func copy(_ plane: Int) -> [UInt8] {
            let (data, stride) = target.plane(plane)
            var out = [UInt8](repeating: 0, count: width * height)
            out.withUnsafeMutableBufferPointer { buffer in
                for row in 0..<height {
                    (buffer.baseAddress! + row * width).update(from: data + row * stride, count: width)
                }
            }
            return out
        }
        var (y, u, v) = (copy(0), copy(1), copy(2))
        toneMapper?.mapSmall(y: &y, cb: &u, cr: &v)
        return Thumbnail(width: width, height: height, y: y, u: u, v: v)
    }

    /// Variance of the Laplacian of a 320 px wide grey picture: low for blurred frames.
    func sharpness(of frame: Frame) throws -> Double {
        try detailScaler.scale(frame, into: detailTarget)
        let (data, stride) = detailTarget.plane(0)
        let w = detailScaler.width, h = detailScaler.height
        guard w > 2, h > 2 else { return 0 }
        var sum = 0.0, sumSquares = 0.0
        for row in 1..<(h - 1) {
            let line = data + row * stride
            for col in 1..<(w - 1) {
                let lap = 4 * Int(line[col]) - Int(line[col - 1]) - Int(line[col + 1]) - Int(line[col - stride]) - Int(line[col + stride])
                let d = Double(lap)
                sum += d
                sumSquares += d * d
            }
        }
        let n = Double((w - 2) * (h - 2))
        let mean = sum / n
        return sumSquares / n - mean * mean
    }
}
