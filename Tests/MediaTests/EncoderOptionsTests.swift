import Foundation
import Media
import MediaSynth
import ServiceTestSupport
import Testing

/// What an encoder says of its own GOPs in its user-data SEI: read from streams our encoder wrote
/// with options chosen here, and from damaged messages without reading past them.
@Suite("Encoder options in the stream")
struct EncoderOptionsTests {
    @Test("x264's and x265's option strings: the longest GOP, and whether keyframes go on the cuts it finds")
    func optionStrings() {
        let x264 = "x264 - core 164 r3095 - H.264/MPEG-4 AVC codec - options: cabac=1 ref=3 keyint=250 keyint_min=25 scenecut=40 intra_refresh=0"
        #expect(EncoderOptions(text: x264) == EncoderOptions(maximumKeyInterval: 250, keyframesOnCuts: true))
        let x265 = "x265 (build 199) - 3.5 - H.265/HEVC codec - options: cpuid=1111039 keyint=30 min-keyint=30 scenecut=0 open-gop"
        #expect(EncoderOptions(text: x265) == EncoderOptions(maximumKeyInterval: 30, keyframesOnCuts: false))
        #expect(EncoderOptions(text: "options: keyint=48 min-keyint=4 no-scenecut") == EncoderOptions(maximumKeyInterval: 48, keyframesOnCuts: false))
        #expect(
            EncoderOptions(text: "options: keyint=infinite keyint_min=25 scenecut=40")
                == EncoderOptions(maximumKeyInterval: nil, keyframesOnCuts: true))
        // No keyint, or one that is no count of pictures: nothing to go by.
        #expect(EncoderOptions(text: "Lavc60.3.100 libx264") == nil)
        #expect(EncoderOptions(text: "options: keyint=soon scenecut=40") == nil)
        #expect(EncoderOptions(text: "options: keyint=0 scenecut=40") == nil)
    }

    /// One length-prefixed NAL unit (4-byte lengths) holding an SEI payload as given.
    func seiPacket(_ payload: [UInt8], codec: Bitstream.Codec) -> [UInt8] {
        let header: [UInt8] = codec == .h264 ? [0x06] : [39 << 1, 0x01]
        let nal = header + payload
        let count = nal.count
        return [UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + nal
    }

    func options(in bytes: [UInt8], codec: Bitstream.Codec) -> EncoderOptions? {
        bytes.withUnsafeBufferPointer { Bitstream(codec: codec, lengthSize: 4).encoderOptions($0) }
    }

    @Test("a user-data SEI message is read in H.264 and HEVC, over emulation-prevention bytes and after other messages")
    func seiMessages() {
        let text = Array("x264 - options: keyint=120 keyint_min=12 scenecut=40".utf8)
        let uuid = [UInt8](repeating: 0xDC, count: 16)
        // A recovery-point message (type 6) first, then the user data (type 5), then the trailing bits.
        let recovery: [UInt8] = [6, 1, 0x84]
        let userData: [UInt8] = [5, UInt8(16 + text.count)] + uuid + text
        for codec in [Bitstream.Codec.h264, .hevc] {
            #expect(
                options(in: seiPacket(recovery + userData + [0x80], codec: codec), codec: codec)
                    == EncoderOptions(maximumKeyInterval: 120, keyframesOnCuts: true), "\(codec)")
        }
        // A payload size of 256 + 10 is written 0xFF 0x0A; a UUID with two zero bytes and a 1 after
        // them is escaped (00 00 03 01) in the NAL unit.
        let long = Array(("options: keyint=60 scenecut=40 " + String(repeating: "x", count: 256 + 10 - 16 - 31)).utf8)
        var escapedUUID = uuid
        escapedUUID[4] = 0
        escapedUUID[5] = 0
        escapedUUID[6] = 1
        let escaped = Array(escapedUUID[0..<6]) + [3] + Array(escapedUUID[6...])
        let message: [UInt8] = [5, 0xFF, UInt8(16 + long.count - 255)] + escaped + long + [0x80]
        #expect(options(in: seiPacket(message, codec: .h264), codec: .h264) == EncoderOptions(maximumKeyInterval: 60, keyframesOnCuts: true))
    }

    @Test("damaged SEI messages give nothing and are never read past their end")
    func damagedMessages() {
        let text = Array("options: keyint=250 scenecut=40".utf8)
        let uuid = [UInt8](repeating: 0xDC, count: 16)
        let cases: [[UInt8]] = [
            [],
            [5],
            [5, 0xFF, 0xFF, 0xFF],  // a size that never ends
            [5, UInt8(16 + text.count + 40)] + uuid + text,  // a size past the NAL unit's end
            [5, 10] + Array(uuid[0..<10]),  // too short to hold a UUID and text
        ]
        for payload in cases {
            #expect(options(in: seiPacket(payload, codec: .h264), codec: .h264) == nil, "\(payload.prefix(4))")
        }
        // A length prefix that runs past the packet: no NAL unit is read at all.
        var cut = seiPacket([5, UInt8(16 + text.count)] + uuid + text + [0x80], codec: .h264)
        cut.removeLast(8)
        #expect(options(in: cut, codec: .h264) == nil)
    }

    @Test("an hvcC record's SEI array is read; a damaged record gives nothing")
    func hevcRecord() {
        let text = Array("x265 - options: keyint=60 min-keyint=6 scenecut=40".utf8)
        let sei: [UInt8] = [39 << 1, 0x01, 5, UInt8(16 + text.count)] + [UInt8](repeating: 0xDC, count: 16) + text + [0x80]
        let sps: [UInt8] = [33 << 1, 0x01, 0x01, 0x60]
        func array(_ type: UInt8, _ unit: [UInt8]) -> [UInt8] { [0x80 | type, 0, 1, UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)] + unit }
        let record = [1] + [UInt8](repeating: 0, count: 21) + [2] + array(33, sps) + array(39, sei)
        func read(_ bytes: [UInt8]) -> EncoderOptions? { bytes.withUnsafeBufferPointer { Bitstream.encoderOptions(inHEVCRecord: $0) } }
        #expect(read(record) == EncoderOptions(maximumKeyInterval: 60, keyframesOnCuts: true))
        // Cut anywhere before the SEI's end, or with more arrays or units than it holds: nothing,
        // and nothing read past the end.
        for end in stride(from: 0, to: record.count - 1, by: 7) {
            #expect(read(Array(record[0..<end])) == nil, "cut at \(end)")
        }
        var overcounted = record
        overcounted[22] = 9
        #expect(read(overcounted) == EncoderOptions(maximumKeyInterval: 60, keyframesOnCuts: true))
        overcounted = record
        overcounted[22] = 1
        #expect(read(overcounted) == nil)
        var notHEVC = record
        notHEVC[0] = 0
        #expect(read(notHEVC) == nil)
    }

    @Test("the encoders our fixtures use write their options: x264 with its first picture, x265 in its hvcC record", .heavy)
    func writtenByOurEncoder() throws {
        func firstOptions(_ video: SyntheticVideo, _ name: String) throws -> EncoderOptions? {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("encoder-options-\(getpid())-\(name)").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try video.write(to: path)
            let input = try InputFile(path: path)
            let stream = try #require(input.bestStream(.video))
            let packet = Packet()
            while try input.read(into: packet) {
                if packet.streamIndex == stream.index { return stream.encoderOptions(firstPacket: packet) }
            }
            return nil
        }
        var x264 = SyntheticVideo(width: 160, height: 90, frameRate: 30, scenes: [.init(frames: 20)])
        x264.audio = nil
        let keyint = 90
        x264.encoderOptions = ["preset": "veryfast", "x264-params": "keyint=\(keyint):min-keyint=9:scenecut=40"]
        #expect(try firstOptions(x264, "x264.mp4") == EncoderOptions(maximumKeyInterval: keyint, keyframesOnCuts: true))
        // A phone's kind of stream: x264 with its scene-cut detection off.
        x264.encoderOptions = SyntheticVideo.phoneX264Options
        #expect(try firstOptions(x264, "phone.mp4")?.keyframesOnCuts == false)
        // An iPhone's HDR as our fixtures write it: x265, 10-bit, open GOPs of a second.
        var x265 = x264
        x265.videoCodec = "libx265"
        x265.pixelFormat = "yuv420p10le"
        let gop = 30
        x265.encoderOptions = ["preset": "ultrafast", "x265-params": "keyint=\(gop):min-keyint=\(gop):open-gop=1:scenecut=0:log-level=none"]
        #expect(try firstOptions(x265, "x265.mp4") == EncoderOptions(maximumKeyInterval: gop, keyframesOnCuts: false))
    }
}
