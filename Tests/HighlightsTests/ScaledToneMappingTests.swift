import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

/// The render scales an HDR picture down to the output's size first and tone-maps it there (a
/// quarter of the work for 4K into 1080p). These tests hold that to the picture a full-size tone
/// map would give: libavfilter's own chain (`ToneMapper.chain`) run on the source's pixels, then
/// scaled with Lanczos, compared by SSIM on generated pictures made to be hard for it.
@Suite("HDR tone mapping after scaling", .heavy)
struct ScaledToneMappingTests {
    /// What the render promises (docs/engine.md), as SSIM per plane against the full-size reference:
    /// on camera footage, and on the worst pictures we could make (stripes one to five pixels wide
    /// of colours far apart, highlights beside shadows: a tone curve is not linear, so the mean of
    /// two tone-mapped stripes is not the tone-mapped mean of the two). Footage measured 0.985–0.998
    /// on an AMD EPYC without AVX-512 and, in Cb, 0.977–0.979 on one with it (the fixture is
    /// encoded and converted on the machine that runs the test); the worst pictures 0.89–0.998 over
    /// 240 of them (colours a camera records and an SDR picture holds; with any codes, down to
    /// 0.65 in Cr, where both tone maps clip: see `painted`). Of the scalers swscale offers for
    /// the first step, bicubic (kept) came closest: on 12 pictures it gave 0.92–0.98 in luma, area
    /// 0.89–0.98, fast bilinear 0.78–0.97, and tone-mapping at full size before the same bicubic
    /// scale 0.988–0.999.
    static let footageSSIM = 0.97
    static let worstCaseSSIM = 0.85

    static func reference(_ width: Int, _ height: Int, into geometry: OutputGeometry) throws -> FilterGraph {
        try FilterGraph(
            width: width, height: height, format: .yuv420p10,
            description: ToneMapper.chain(.rolledOff)
                + ",scale=\(geometry.scaledWidth):\(geometry.scaledHeight):flags=lanczos+accurate_rnd+full_chroma_int,format=yuv420p")
    }

    /// SSIM of Y, Cb and Cr of `source` as the render makes it and as the full-size reference does.
    static func compare(_ source: Frame, pipeline: PicturePipeline, reference: FilterGraph, geometry: OutputGeometry) throws -> [Double] {
        let (w, h) = (geometry.scaledWidth, geometry.scaledHeight)
        let ours = try pipeline.prepare(source)
        var full: Frame?
        try reference.filter(source) { full = try $0.clone() }
        let expected = try #require(full)
        try #require(ours.width == w && ours.height == h && ours.pixelFormat == .yuv420p)
        return (0..<3).map { plane in
            ssim(ours.plane(plane), expected.plane(plane), width: plane == 0 ? w : w / 2, height: plane == 0 ? h : h / 2)
        }
    }

    @Test(
        "scaled then tone-mapped stays within the stated SSIM of tone-mapped at full size, on generated HLG pictures",
        arguments: [(3840, 2160, Quality.high), (2560, 1440, .high), (1920, 1080, .medium), (3840, 2160, .low), (1920, 1080, .low)])
    func generatedPictures(width: Int, height: Int, quality: Quality) throws {
        let geometry = OutputGeometry(width: width, height: height, sampleAspectRatio: 1, rotation: 0, quality: quality)
        let pipeline = try PicturePipeline(geometry: geometry, hdr: .hlg)
        let reference = try Self.reference(width, height, into: geometry)
        for seed in Self.seeds(width: width) {
            let planes = try Self.compare(
                try Self.painted(width: width, height: height, seed: seed), pipeline: pipeline,
                reference: reference, geometry: geometry)
            #expect(
                planes.allSatisfy { $0 >= Self.worstCaseSSIM },
                "\(width)×\(height) → \(geometry.scaledWidth)×\(geometry.scaledHeight), seed \(seed): SSIM Y, Cb, Cr \(planes)")
        }
    }

    @Test(
        "on HLG camera footage (the painted phone takes), within the stated SSIM of tone-mapped at full size",
        arguments: [Quality.medium, .low])
    func footage(quality: Quality) throws {
        // Every 20th picture: several shots, pans and the bright sky among them.
        let indices = Array(stride(from: 10, to: 170, by: 20))
        let pictures = try Fixtures.pictures(of: try Fixtures.path("phone-hevc.mov", Fixtures.phone(hevc: true)), at: indices)
        try #require(pictures.count == indices.count && pictures[0].pixelFormat == .yuv420p10)
        let (width, height) = (pictures[0].width, pictures[0].height)
        let geometry = OutputGeometry(width: width, height: height, sampleAspectRatio: 1, rotation: 0, quality: quality)
        let pipeline = try PicturePipeline(geometry: geometry, hdr: .hlg)
        let reference = try Self.reference(width, height, into: geometry)
        for (index, picture) in pictures.enumerated() {
            let planes = try Self.compare(picture, pipeline: pipeline, reference: reference, geometry: geometry)
            #expect(planes.allSatisfy { $0 >= Self.footageSSIM }, "picture \(indices[index]): SSIM Y, Cb, Cr \(planes)")
        }
    }

    /// Pictures per size: new seeds every run (printed with any failure), fewer for the largest;
    /// `MOMENTS_PICTURE_SEED=a,b` paints those instead.
    static func seeds(width: Int) -> [UInt64] {
        if let listed = Seeds.replayed("MOMENTS_PICTURE_SEED") { return listed }
        var random = SystemRandomNumberGenerator()
        return (0..<(width > 2560 ? 2 : 4)).map { _ in random.next() }
    }

    /// A 10-bit HLG BT.2020 picture of random blocks of colour (light up to the HLG peak, far above
    /// SDR's white), blocks of stripes one to five pixels wide that a scaler must average, and
    /// soft gradients: hard edges, fine detail and highlights, where scaling before the tone map
    /// and after it part most.
    static func painted(width: Int, height: Int, seed: UInt64) throws -> Frame {
        var random = SplitMix64(seed: seed)
        let frame = try Frame.video(width: width, height: height, format: .yuv420p10)
        frame.color = .bt2020(transfer: .hlg)
        func rows(_ plane: Int) -> (UnsafeMutablePointer<UInt16>, Int) {
            let (base, stride) = frame.plane(plane)
            return (UnsafeMutableRawPointer(base).assumingMemoryBound(to: UInt16.self), stride / 2)
        }
        let (y, ys) = rows(0), (cb, cbs) = rows(1), (cr, crs) = rows(2)
        // A colour a camera can record (its BT.2020 R′G′B′ inside [0, 1]) that an SDR picture can
        // hold: the reference maps it inside the legal codes (16–235, 16–240). Random codes are
        // often neither, and there both tone maps clip chroma at code 0 or 255, the reference
        // exactly and the table's interpolation across the clip up to 28 codes from it, which
        // SSIM's mean term reads as 0.01 (28 against 0; 128 against 100 as 0.97): a measure of
        // the clip (noted in docs/engine.md), not of the scaling this suite holds.
        let single = try Frame.video(width: 2, height: 2, format: .yuv420p10)
        single.color = .bt2020(transfer: .hlg)
        let mapping = try FilterGraph(width: 2, height: 2, format: .yuv420p10, description: ToneMapper.chain(.rolledOff))
        func holdable(_ codes: (UInt16, UInt16, UInt16)) throws -> Bool {
            for (plane, value) in [(0, codes.0), (1, codes.1), (2, codes.2)] {
                let (base, stride) = single.plane(plane)
                for row in 0..<(plane == 0 ? 2 : 1) {
                    let line = UnsafeMutableRawPointer(base + row * stride).assumingMemoryBound(to: UInt16.self)
                    for column in 0..<(plane == 0 ? 2 : 1) { line[column] = value }
                }
            }
            var legal = false
            try mapping.filter(single) { out in
                let (y, cb, cr) = (out.plane(0).0[0], out.plane(1).0[0], out.plane(2).0[0])
                legal = (16...235).contains(y) && (16...240).contains(cb) && (16...240).contains(cr)
            }
            return legal
        }
        func colour() throws -> (UInt16, UInt16, UInt16) {
            while true {
                let codes = (
                    UInt16.random(in: 64...940, using: &random), UInt16.random(in: 352...672, using: &random),
                    UInt16.random(in: 352...672, using: &random)
                )
                let (l, b, r) = ((Double(codes.0) - 64) / 876, (Double(codes.1) - 512) / 896, (Double(codes.2) - 512) / 896)
                let signal = [l + 1.4746 * r, l - 0.16455 * b - 0.57135 * r, l + 1.8814 * b]
                if signal.allSatisfy({ (0...1).contains($0) }), try holdable(codes) { return codes }
            }
        }
        // A gradient from top to bottom, one colour to another.
        let (top, bottom) = (try colour(), try colour())
        func mix(_ a: UInt16, _ b: UInt16, _ t: Int, _ n: Int) -> UInt16 { UInt16((Int(a) * (n - t) + Int(b) * t) / n) }
        for row in 0..<height {
            let luma = mix(top.0, bottom.0, row, height)
            for column in 0..<width { y[row * ys + column] = luma }
        }
        for row in 0..<(height / 2) {
            let (u, v) = (mix(top.1, bottom.1, row, height / 2), mix(top.2, bottom.2, row, height / 2))
            for column in 0..<(width / 2) { cb[row * cbs + column] = u; cr[row * crs + column] = v }
        }
        // Blocks: plain, or stripes of two colours (across or down) one to five pixels wide.
        for _ in 0..<14 {
            let (bw, bh) = (
                Int.random(in: width / 16...width / 3, using: &random) & ~1, Int.random(in: height / 16...height / 3, using: &random) & ~1
            )
            let (x0, y0) = (Int.random(in: 0...(width - bw), using: &random) & ~1, Int.random(in: 0...(height - bh), using: &random) & ~1)
            let (a, b) = (try colour(), try colour())
            let stripe = Int.random(in: 0...5, using: &random)
            let across = Bool.random(using: &random)
            for row in y0..<(y0 + bh) {
                for column in x0..<(x0 + bw) {
                    let second = stripe > 0 && ((across ? row : column) / stripe) % 2 == 1
                    y[row * ys + column] = second ? b.0 : a.0
                }
            }
            for row in (y0 / 2)..<((y0 + bh) / 2) {
                for column in (x0 / 2)..<((x0 + bw) / 2) {
                    let second = stripe > 0 && ((across ? row * 2 : column * 2) / stripe) % 2 == 1
                    (cb[row * cbs + column], cr[row * crs + column]) = second ? (b.1, b.2) : (a.1, a.2)
                }
            }
        }
        return frame
    }
}

/// Mean SSIM of two 8-bit planes over 8 × 8 windows every 4 pixels (as FFmpeg's `ssim` filter
/// measures), with the usual constants for 8-bit samples.
func ssim(_ a: (UnsafeMutablePointer<UInt8>, Int), _ b: (UnsafeMutablePointer<UInt8>, Int), width: Int, height: Int) -> Double {
    let c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255)
    var total = 0.0, windows = 0
    for top in stride(from: 0, through: height - 8, by: 4) {
        for left in stride(from: 0, through: width - 8, by: 4) {
            var sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0
            for row in top..<(top + 8) {
                for column in left..<(left + 8) {
                    let p = Int(a.0[row * a.1 + column]), q = Int(b.0[row * b.1 + column])
                    sa += p; sb += q; saa += p * p; sbb += q * q; sab += p * q
                }
            }
            let n = 64.0
            let (ma, mb) = (Double(sa) / n, Double(sb) / n)
            let va = Double(saa) / n - ma * ma, vb = Double(sbb) / n - mb * mb, cov = Double(sab) / n - ma * mb
            total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2))
            windows += 1
        }
    }
    return total / Double(max(1, windows))
}
