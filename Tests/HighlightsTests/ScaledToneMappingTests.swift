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
    /// encoded and converted on the machine that runs the test); the worst pictures 0.85–0.99 over
    /// 80 of them, and down to 0.76 (Cr, one 4K picture in a fresh-clone run) on the EPYC with
    /// AVX-512. Of the scalers swscale offers for the first
    /// step, bicubic (kept) came closest: on the same 12 pictures it gave 0.92–0.98 in luma, area
    /// 0.89–0.98, fast bilinear 0.78–0.97, and tone-mapping at full size before the same bicubic scale 0.988–0.999.
    static let footageSSIM = 0.97
    static let worstCaseSSIM = 0.70

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

    /// Pictures per size: new seeds every run (printed with any failure), fewer for the largest.
    static func seeds(width: Int) -> [UInt64] {
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
        func colour() -> (UInt16, UInt16, UInt16) {
            (
                UInt16.random(in: 64...940, using: &random), UInt16.random(in: 352...672, using: &random),
                UInt16.random(in: 352...672, using: &random)
            )
        }
        // A gradient from top to bottom, one colour to another.
        let (top, bottom) = (colour(), colour())
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
            let (a, b) = (colour(), colour())
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
