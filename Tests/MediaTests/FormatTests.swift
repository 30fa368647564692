import Foundation
import Media
import MediaSynth
import ServiceTestSupport
import Testing

/// Media's own names for FFmpeg's formats, fractions and colour tags: each must say what FFmpeg
/// says, and survive a trip through a real encoder, muxer, demuxer and decoder.
@Suite("Media formats and colour descriptions")
struct FormatTests {
    @Test("Pixel and sample formats carry FFmpeg's names and depths")
    func formats() {
        #expect(PixelFormat.yuv420p.name == "yuv420p")
        #expect(PixelFormat.yuv420p10.name == "yuv420p10le")
        #expect(PixelFormat(name: "yuv420p10le") == .yuv420p10)
        #expect(PixelFormat(name: "gray") == .gray8)
        #expect(PixelFormat(name: "no-such-format") == nil)
        #expect(PixelFormat.yuv420p.bitDepth == 8)
        #expect(PixelFormat.yuv444p10.bitDepth == 10)
        #expect(SampleFormat.floatPlanar.name == "fltp")
        #expect(SampleFormat.floatPlanar.isPlanar)
        #expect(!SampleFormat.int16.isPlanar)
    }

    @Test("Fractions: exact terms, FFmpeg's nearest approximation, and 0/0 as unknown")
    func rationals() {
        #expect(Rational(approximating: 29.97) == Rational(2997, 100))
        #expect(Rational(approximating: 30000.0 / 1001) == Rational(30000, 1001))
        #expect(Rational(approximating: 25) == Rational(25, 1))
        #expect(Rational(1, 90_000).value == 1.0 / 90_000)
        #expect(Rational(0, 0).value == 0)
        #expect(!Rational(0, 0).isPositive)
        #expect(Rational(30000, 1001).description == "30000/1001")
    }

    @Test("Colour tags read by name as FFmpeg names them")
    func colourNames() {
        #expect(ColorDescription.Transfer(name: "arib-std-b67") == .hlg)
        #expect(ColorDescription.Transfer(name: "smpte2084") == .pq)
        #expect(ColorDescription.Transfer(name: "bt709") == .bt709)
        #expect(ColorDescription.Transfer(name: "sunlight") == nil)
        #expect(ColorDescription.bt709.primaries.name == "bt709")
        #expect(ColorDescription.bt2020(transfer: .hlg).space.name == "bt2020nc")
        #expect(ColorDescription.bt709.range.name == "tv")
        #expect(ColorDescription.unspecified.transfer.name == nil)
    }

    @Test("A frame keeps its colour description and picture type as set")
    func frameFields() throws {
        let frame = try Frame.video(width: 64, height: 36, format: .yuv420p10)
        #expect(frame.pixelFormat == .yuv420p10)
        #expect(frame.color == .unspecified)
        frame.color = .bt2020(transfer: .pq)
        #expect(frame.color == .bt2020(transfer: .pq))
        for type in [PictureType.intra, .predicted, .bidirectional, .unspecified] {
            frame.pictureType = type
            #expect(frame.pictureType == type)
        }
    }

    @Test(
        "An HLG 10-bit HEVC file written by the project's encoder reads back with its tags, format, time base and profile",
        .heavy)
    func roundTrip() throws {
        let video = SyntheticVideo.phone(minutes: 1.0 / 60, hdr: true, width: 128, height: 72)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("formats-\(getpid()).mov").path
        try video.write(to: path)
        defer { try? FileManager.default.removeItem(atPath: path) }

        let input = try InputFile(path: path)
        let stream = try #require(input.bestStream(.video))
        #expect(stream.mediaType == .video)
        #expect(stream.color == .bt2020(transfer: .hlg))
        #expect(stream.pixelFormat == .yuv420p10)
        #expect(stream.profileName == "Main 10")
        #expect(stream.timeBase.isPositive)
        #expect(abs(stream.seconds(stream.ticks(0.5)) - 0.5) <= stream.timeBase.value)
        #expect(input.bestStream(.audio)?.mediaType == .audio)

        let decoder = try Decoder(stream: stream)
        let packet = Packet(), frame = Frame()
        var pictures: [(PixelFormat, ColorDescription)] = []
        while try input.read(into: packet) {
            guard packet.streamIndex == stream.index else { continue }
            try decoder.decode(packet, into: frame) { pictures.append(($0.pixelFormat, $0.color)) }
        }
        try decoder.decode(nil, into: frame) { pictures.append(($0.pixelFormat, $0.color)) }
        #expect(pictures.count == video.frameCount)
        #expect(pictures.allSatisfy { $0.0 == .yuv420p10 && $0.1 == .bt2020(transfer: .hlg) })
    }
}
