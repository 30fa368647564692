import Foundation
import Media
import MediaSynth
import ServiceTestSupport
import Testing

/// Which pictures nothing refers to, read from the NAL unit headers: on made-up headers, and on
/// streams x264 and x265 wrote in GOP shapes of every kind, where decoding without those
/// pictures must leave every other picture exactly as a full decode makes it.
@Suite("Non-reference pictures")
struct PictureReferenceTests {
    /// One access unit: each NAL unit behind a 4-byte length.
    func accessUnit(_ units: [[UInt8]]) -> [UInt8] {
        units.flatMap { nal in
            let count = nal.count
            return [UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + nal
        }
    }

    func reference(_ units: [[UInt8]], _ codec: Bitstream.Codec) -> (referenced: Bool, layer: Int)? {
        accessUnit(units).withUnsafeBufferPointer { Bitstream(codec: codec, lengthSize: 4).reference($0) }
    }

    @Test("H.264's nal_ref_idc and HEVC's sub-layer non-reference types and temporal ids, after other NAL units")
    func headers() {
        // H.264: forbidden bit, nal_ref_idc (2 bits), type (5 bits).
        #expect(reference([[0x01, 0x9A]], .h264)! == (false, 0))  // a B slice nothing refers to
        #expect(reference([[0x41, 0x9A]], .h264)! == (true, 0))
        #expect(reference([[0x65, 0x88]], .h264)! == (true, 0))  // IDR
        #expect(reference([[0x06, 0x05, 0x00], [0x09, 0xF0], [0x01, 0x9E]], .h264)! == (false, 0))  // SEI and delimiter first
        #expect(reference([[0x06, 0x05, 0x00]], .h264) == nil)
        // HEVC: type in bits 1–6 of the first byte, nuh_temporal_id_plus1 in the low 3 of the second.
        func hevc(_ type: UInt8, layer: UInt8) -> [UInt8] { [type << 1, layer + 1, 0xAF] }
        #expect(reference([hevc(0, layer: 0)], .hevc)! == (false, 0))  // TRAIL_N
        #expect(reference([hevc(1, layer: 2)], .hevc)! == (true, 2))  // TRAIL_R
        #expect(reference([hevc(8, layer: 1)], .hevc)! == (false, 1))  // RASL_N
        #expect(reference([hevc(9, layer: 0)], .hevc)! == (true, 0))  // RASL_R
        #expect(reference([hevc(14, layer: 0)], .hevc)! == (false, 0))  // reserved, sub-layer non-reference
        #expect(reference([hevc(21, layer: 0)], .hevc)! == (true, 0))  // CRA
        #expect(reference([[39 << 1, 1, 0x05], hevc(2, layer: 3)], .hevc)! == (false, 3))  // an SEI, then TSA_N
        #expect(reference([[0x02]], .hevc) == nil)  // a header cut short
        #expect(reference([], .hevc) == nil)
    }

    /// A GOP shape for case `n`: the codec, a pyramid of B-frames or none, temporal layers and open
    /// GOPs (x265) cycle through every choice; the count of B-frames and the GOP's length are drawn.
    static func source(_ n: UInt64) -> (video: SyntheticVideo, summary: String, bFrames: Int, pyramid: Bool) {
        var random = SplitMix64(seed: 0x5eed_0000 + n)
        let hevc = n & 1 == 1, pyramid = n & 2 != 0
        let bFrames = n % 5 == 4 ? 0 : 1 + Int(random.next() % 4)
        let gop = 12 + Int(random.next() % 30)
        var video = SyntheticVideo(
            width: 128, height: 72, frameRate: 60,
            scenes: [
                .init(frames: 40, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 220),
                .init(frames: 40, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 330),
            ])
        video.audio = nil
        video.gopSize = gop
        video.container = "mov"
        var summary = "\(hevc ? "hevc" : "h264") b\(bFrames)\(pyramid ? " pyramid" : "") gop \(gop)"
        if hevc {
            let open = n & 8 != 0, layers = bFrames > 0 && n & 4 != 0
            video.videoCodec = "libx265"
            video.encoderOptions = [
                "preset": "ultrafast",
                "x265-params": "keyint=\(gop):min-keyint=\(gop):scenecut=0:bframes=\(bFrames)"
                    + ":b-pyramid=\(pyramid ? 1 : 0):open-gop=\(open ? 1 : 0):temporal-layers=\(layers ? 1 : 0):log-level=none",
            ]
            summary += (open ? " open" : "") + (layers ? " temporal layers" : "")
        } else {
            video.encoderOptions = ["preset": "veryfast", "x264-params": "scenecut=0:bframes=\(bFrames):b-pyramid=\(pyramid ? "normal" : "none")"]
        }
        return (video, summary, bFrames, pyramid)
    }

    /// Each decoded picture's luma, hashed, by timestamp; and how many packets `skip` left out.
    static func decode(_ path: String, skip: (Bitstream, UnsafeBufferPointer<UInt8>) -> Bool) throws -> (pictures: [Int64: UInt64], skipped: Int) {
        let input = try InputFile(path: path)
        let stream = try #require(input.bestStream(.video))
        let bitstream = try #require(stream.bitstream)
        let decoder = try Decoder(stream: stream, options: .init(threads: 2, frameThreads: true))
        let packet = Packet(), frame = Frame()
        var pictures: [Int64: UInt64] = [:], skipped = 0
        func take(_ frame: Frame) {
            let (data, stride) = frame.plane(0)
            let rowBytes = frame.width * ((frame.pixelFormat.bitDepth ?? 8) > 8 ? 2 : 1)
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for row in 0..<frame.height {
                for byte in UnsafeBufferPointer(start: data + row * stride, count: rowBytes) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            }
            pictures[frame.pts ?? -1] = hash
        }
        while try input.read(into: packet) {
            guard packet.streamIndex == stream.index else { continue }
            if skip(bitstream, packet.bytes) {
                skipped += 1
                continue
            }
            try decoder.decode(packet, into: frame, take)
        }
        try decoder.decode(nil, into: frame, take)
        return (pictures, skipped)
    }

    static let cases: Range<UInt64> = 0..<16

    @Test("the drawn GOP shapes have both codecs, no B-frames, B-frames with and without a pyramid, and temporal layers")
    func coverage() {
        let summaries = Self.cases.map(Self.source)
        #expect(summaries.contains { $0.summary.hasPrefix("h264") && $0.bFrames > 0 && $0.pyramid })
        #expect(summaries.contains { $0.summary.hasPrefix("h264") && $0.bFrames > 0 && !$0.pyramid })
        #expect(summaries.contains { $0.summary.hasPrefix("hevc") && $0.bFrames > 0 && $0.pyramid })
        #expect(summaries.contains { $0.summary.hasPrefix("hevc") && $0.bFrames > 0 && !$0.pyramid })
        #expect(summaries.contains { $0.bFrames == 0 })
        #expect(summaries.contains { $0.summary.contains("temporal layers") })
        #expect(summaries.contains { $0.summary.contains("open") })
    }

    @Test("left out, the pictures called non-reference change no other picture", .heavy, arguments: cases)
    func leftOut(n: UInt64) throws {
        let (video, summary, bFrames, pyramid) = Self.source(n)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("references-\(getpid())-\(n).mov").path
        try video.write(to: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var top = 0
        _ = try Self.decode(path) { bitstream, bytes in
            top = max(top, bitstream.reference(bytes)?.layer ?? 0)
            return false
        }
        if summary.contains("temporal layers") { #expect(top > 0, "\(summary): every picture in layer 0") }
        let full = try Self.decode(path) { _, _ in false }
        let lean = try Self.decode(path) { bitstream, bytes in
            bitstream.reference(bytes).map { !$0.referenced && $0.layer == top } ?? false
        }
        #expect(full.pictures.count == video.frameCount, "\(summary)")
        #expect(lean.pictures.count == full.pictures.count - lean.skipped, "\(summary): \(lean.skipped) left out")
        let changed = lean.pictures.filter { full.pictures[$0.key] != $0.value }.keys.sorted()
        #expect(changed.isEmpty, "\(summary): pictures at \(changed.prefix(5)) differ without the \(lean.skipped) left out")
        // Without B-frames every picture is referred to; B-frames outside a pyramid never are.
        if bFrames == 0 { #expect(lean.skipped == 0, "\(summary)") }
        if bFrames > 0 && !pyramid { #expect(lean.skipped > 0, "\(summary)") }
    }
}
