import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("HDR tone mapping", .heavy)
struct ToneMappingTests {
    /// The same painted shots as SDR H.264 (BT.709) and as HLG HEVC (the SDR picture converted to
    /// HLG BT.2020 by our encoder's pipeline, reference white at 203 cd/m²).
    static func sources() throws -> (sdr: String, hlg: String) {
        (try Fixtures.path("phone-h264.mov", Fixtures.phone(hevc: false)), try Fixtures.path("phone-hevc.mov", Fixtures.phone(hevc: true)))
    }

    /// Every frame of `path` as 8-bit 4:2:0, decoded by ffmpeg.
    static func frames(_ path: String, width: Int, height: Int) throws -> [[UInt8]] {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent("frames-\(UUID().uuidString).yuv")
        defer { try? FileManager.default.removeItem(at: raw) }
        try run("ffmpeg", ["-v", "error", "-y", "-i", path, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", raw.path])
        let data = [UInt8](try Data(contentsOf: raw))
        let size = width * height * 3 / 2
        return stride(from: 0, to: data.count - size + 1, by: size).map { Array(data[$0..<$0 + size]) }
    }

    /// Mean luma and mean chroma distance from grey (saturation) of 4:2:0 pictures.
    static func lumaAndSaturation(_ pictures: [[UInt8]], width: Int, height: Int) -> (luma: Double, saturation: Double) {
        var luma = 0.0, saturation = 0.0
        let chroma = width * height / 4
        for p in pictures {
            luma += Double(p[0..<width * height].reduce(0) { $0 + Int($1) }) / Double(width * height)
            var s = 0.0
            for i in 0..<chroma {
                let u = Double(p[width * height + i]) - 128, v = Double(p[width * height + chroma + i]) - 128
                s += (u * u + v * v).squareRoot()
            }
            saturation += s / Double(chroma)
        }
        return (luma / Double(pictures.count), saturation / Double(pictures.count))
    }

    @Test("codec=h264 on HLG: SDR BT.709 tagged, and it looks like the SDR version of the same shots (luma and saturation within 10 %)")
    func hlgLooksLikeSDR() throws {
        let (sdr, hlg) = try Self.sources()
        let output = Fixtures.scratch().appendingPathComponent("hlg-tonemapped.mp4").path
        let report = try HighlightEngine().highlight(input: hlg, output: output, settings: HighlightSettings(duration: 8, codec: .h264))
        #expect(report.render.mode == .encode && report.input.dynamicRange == "hlg")
        let stream = try #require(try Probe(output).video)
        #expect(stream["pix_fmt"] == "yuv420p")
        #expect(stream["color_primaries"] == "bt709" && stream["color_transfer"] == "bt709" && stream["color_space"] == "bt709")
        #expect(stream["color_range"] == "tv")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)).range(of: Data("colr".utf8)) != nil, "a colr box")

        // The SDR source's frames at the times the highlight shows.
        let (w, h) = (320, 180)
        let shown = try Self.frames(output, width: w, height: h)
        let reference = try Self.frames(sdr, width: w, height: h)
        var matched: [[UInt8]] = []
        var start = 0.0
        for segment in report.segments {
            let count = Int((segment.duration * 30).rounded())
            let first = Int((segment.start * 30).rounded())
            matched += reference[first..<min(reference.count, first + count)]
            start += segment.duration
        }
        try #require(!shown.isEmpty && abs(shown.count - matched.count) <= report.segments.count)
        let a = Self.lumaAndSaturation(shown, width: w, height: h)
        let b = Self.lumaAndSaturation(matched, width: w, height: h)
        #expect(abs(a.luma / b.luma - 1) <= 0.10, "luma \(a.luma) against \(b.luma)")
        #expect(abs(a.saturation / b.saturation - 1) <= 0.10, "saturation \(a.saturation) against \(b.saturation)")
    }

    @Test("SDR sources encoded to H.264 are tagged BT.709 too")
    func sdrTagged() throws {
        let (sdr, _) = try Self.sources()
        let output = Fixtures.scratch().appendingPathComponent("sdr-h264.mp4").path
        _ = try HighlightEngine().highlight(input: sdr, output: output, settings: HighlightSettings(duration: 6, codec: .h264))
        let stream = try #require(try Probe(output).video)
        #expect(stream["color_primaries"] == "bt709" && stream["color_transfer"] == "bt709" && stream["color_space"] == "bt709")
    }

    @Test("the table gives what libavfilter's zscale + tonemap chain gives: within a code on average in luma, two in chroma")
    func tableMatchesTheChain() throws {
        let (_, hlg) = try Self.sources()
        // The 100th frame: well inside the second shot, which has a pan and colour.
        let source = try #require(try Fixtures.pictures(of: hlg, at: [99]).first)
        #expect(source.pixelFormat == .yuv420p10)
        let mapper = try ToneMapper(transfer: .hlg)
        let mapped = try Frame.video(width: source.width, height: source.height, format: .yuv420p)
        try mapper.map(source, into: mapped)

        let chain = ToneMapper.chain(.rolledOff).replacingOccurrences(of: "format=yuv444p", with: "format=yuv420p")
        let graph = try FilterGraph(width: source.width, height: source.height, format: .yuv420p10, description: chain)
        var direct: Frame?
        try graph.filter(source) { direct = try $0.clone() }
        let reference = try #require(direct)
        // Measured 0.69 / 1.91 / 0.57 codes on average; up to 22–24 on a few pixels of the sharpest
        // colour edges, where zscale interpolates chroma between samples and the table uses each
        // 2 × 2 block's own.
        for (plane, w, h, meanLimit, maxLimit) in [(0, 320, 180, 1.0, 32), (1, 160, 90, 2.0, 32), (2, 160, 90, 2.0, 32)] {
            let (a, sa) = mapped.plane(plane), (b, sb) = reference.plane(plane)
            var total = 0, signed = 0, worst = 0
            for y in 0..<h {
                for x in 0..<w {
                    let d = Int(a[y * sa + x]) - Int(b[y * sb + x])
                    total += abs(d)
                    signed += d
                    worst = max(worst, abs(d))
                }
            }
            let mean = Double(total) / Double(w * h)
            #expect(
                mean <= meanLimit && worst <= maxLimit,
                "plane \(plane): mean difference \(mean) (signed \(Double(signed) / Double(w * h))), largest \(worst)")
        }
    }
}
