import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

/// A corpus of damaged and hostile media, made here from our own fixtures: each file goes through
/// the real `moments highlight` under a 60 s kill timer and a memory meter, and must end in a
/// coded error (one `error: <code>: <sentence>` line, no output) or a valid highlight. Never a
/// crash, a hang, or memory beyond `memoryLimitMB`. One file at a time (`.serialized`): forty
/// engines at once on two cores would starve every timed test of the run.
@Suite("Bad-media corpus", .heavy, .serialized)
struct MediaCorpusTests {
    static let memoryLimitMB = 400.0

    /// The clip every damaged MP4 starts from: H.264 with B-frames (so it has `ctts`) and AAC,
    /// 3 s at 30 fps, 320×180, index at the end.
    static func base() throws -> String {
        try Fixtures.path("corpus-base.mp4", Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4"))
    }

    static let video = ["moov", "trak:vide"]
    static let videoTable = video + ["mdia", "minf", "stbl"]
    static let soundTable = ["moov", "trak:soun", "mdia", "minf", "stbl"]

    enum Case: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case flippedSamples1, flippedSamples2, flippedSamples3, flippedSamples4, flippedIndex1, flippedIndex2
        case zeroSampleEntrySize, zeroTrackSize, hugeSampleEntrySize, hugeTrackSize, thinPicture, tinyAspectRatio
        case hevcTagOnH264, unknownVideoTag, videoTagOnSound
        case zeroTimescale, timescaleOne, zeroDeltas, hugeDeltas, negativeCompositionOffsets, negativeEditList, hugeEditList
        case hugeMovieDuration, variableFrameRateChaos
        case hugeSampleSizes, chunkOffsetsPastEnd, absurdSampleCount, noKeyframes, emptyMovie, twoMovies, ftypOnly, mdatOnly
        case audioOnly, singleFrame, thousandFramesPerSecond, matroskaCutShort, transportStreamWithHoles
        case hlsPlaylist, concatPlaylist, sdpSession
        var testDescription: String { rawValue }
    }

    /// The file for `c`, its extension, and the codes it may end in (nil: any coded error, or a highlight).
    static func make(_ c: Case) throws -> (bytes: [UInt8], ext: String, codes: Set<String>?) {
        var file = try MP4File(try base())
        var changed = true
        switch c {
        case .flippedSamples1, .flippedSamples2, .flippedSamples3, .flippedSamples4:
            // One bit in 400 flipped inside the samples (mdat): decoders must conceal or refuse.
            let seed = UInt64(c.rawValue.last!.wholeNumberValue!)
            var bytes = file.bytes
            let mdat = try #require(file.boxes.first { $0.type == "mdat" })
            var random = SplitMix64(seed: seed)
            for _ in 0..<(mdat.payload!.count / 400) {
                let at = mdat.offset + 8 + Int(random.next() % UInt64(mdat.payload!.count))
                bytes[at] ^= 1 << UInt8(random.next() % 8)
            }
            return (bytes, "mp4", nil)
        case .flippedIndex1, .flippedIndex2:
            // One byte in 60 of the index (moov) replaced: sizes, counts and offsets go wrong.
            var bytes = file.bytes
            let moov = try #require(file.boxes.first { $0.type == "moov" })
            var random = SplitMix64(seed: c == .flippedIndex1 ? 11 : 12)
            let length = moov.bytes.count
            for _ in 0..<(length / 60) { bytes[moov.offset + 8 + Int(random.next() % UInt64(length - 8))] = UInt8(random.next() & 0xFF) }
            return (bytes, "mp4", nil)
        case .zeroSampleEntrySize:
            changed = file.edit(videoTable + ["stsd"]) {
                $0.put16(0, at: 40); $0.put16(0, at: 42)
            }
        case .hugeSampleEntrySize:
            changed = file.edit(videoTable + ["stsd"]) {
                $0.put16(0xFFFF, at: 40); $0.put16(0xFFFF, at: 42)
            }
        case .zeroTrackSize:
            changed = file.edit(video + ["tkhd"]) {
                $0.put(0, at: 76); $0.put(0, at: 80)
            }
        case .hugeTrackSize:
            changed = file.edit(video + ["tkhd"]) {
                $0.put(0xFFFF_0000, at: 76); $0.put(0xFFFF_0000, at: 80)
            }
        case .thinPicture:
            // A real 2048×16 picture: the thumbnails and the scene detector must stay bounded.
            var thin = SyntheticVideo(width: 2048, height: 16, frameRate: 30, scenes: [.init(frames: 60), .init(frames: 60, transitionIn: .cut)])
            thin.encoderOptions = ["preset": "ultrafast"]
            return (try bytes(of: Fixtures.path("corpus-thin.mp4", thin)), "mp4", nil)
        case .tinyAspectRatio:
            var narrow = Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4")
            narrow.sampleAspectRatio = (1, 64)
            return (try bytes(of: Fixtures.path("corpus-sar.mp4", narrow)), "mp4", nil)
        case .hevcTagOnH264:
            changed = file.edit(videoTable + ["stsd"]) { $0.replaceSubrange(12..<16, with: Array("hvc1".utf8)) }
        case .unknownVideoTag:
            changed = file.edit(videoTable + ["stsd"]) { $0.replaceSubrange(12..<16, with: Array("zqzq".utf8)) }
        case .videoTagOnSound:
            changed = file.edit(soundTable + ["stsd"]) { $0.replaceSubrange(12..<16, with: Array("avc1".utf8)) }
        case .zeroTimescale:
            changed = file.edit(video + ["mdia", "mdhd"]) { $0.put(0, at: 12) }
        case .timescaleOne:
            // Every tick a second: the same samples now claim hours.
            changed = file.edit(video + ["mdia", "mdhd"]) { $0.put(1, at: 12) }
        case .zeroDeltas:
            changed = file.edit(videoTable + ["stts"]) { table in
                for entry in 0..<Int(table.u32(at: 4)) { table.put(0, at: 12 + 8 * entry) }
            }
        case .hugeDeltas:
            changed = file.edit(videoTable + ["stts"]) { table in
                for entry in 0..<Int(table.u32(at: 4)) { table.put(0xFFFF_FFFF, at: 12 + 8 * entry) }
            }
        case .negativeCompositionOffsets:
            changed = file.edit(videoTable + ["ctts"]) { table in
                table[0] = 1  // version 1: signed offsets
                for entry in 0..<Int(table.u32(at: 4)) { table.put(0x8000_0001, at: 12 + 8 * entry) }
            }
        case .negativeEditList:
            changed = file.edit(video + ["edts", "elst"]) { $0.put(0xFFFF_FF00, at: 12) }  // media_time −256 (v0)
        case .hugeEditList:
            changed = file.edit(video + ["edts", "elst"]) {
                $0.put(0xFFFF_FFFE, at: 8); $0.put(0x7FFF_FFFF, at: 12)
            }
        case .hugeMovieDuration:
            changed = file.edit(["moov", "mvhd"]) {
                $0.put(1, at: 12); $0.put(0xFFFF_FFFF, at: 16)
            }
        case .variableFrameRateChaos:
            // One stts entry per sample, each a different delta: 0, 1 tick, normal, long, very long.
            changed = file.edit(videoTable + ["stts"]) { table in
                let samples = (0..<Int(table.u32(at: 4))).reduce(0) { $0 + Int(table.u32(at: 8 + 8 * $1)) }
                var random = SplitMix64(seed: 7)
                let deltas: [UInt32] = [0, 1, 512, 512, 512, 7000, 250_000]
                var rebuilt = Array(table[0..<4])
                rebuilt += [0, 0, 0, 0]
                rebuilt.put(UInt32(samples), at: 4)
                for _ in 0..<samples {
                    var entry = [UInt8](repeating: 0, count: 8)
                    entry.put(1, at: 0)
                    entry.put(deltas[Int(random.next() % UInt64(deltas.count))], at: 4)
                    rebuilt += entry
                }
                table = rebuilt
            }
        case .hugeSampleSizes:
            changed = file.edit(videoTable + ["stsz"]) { table in
                for entry in 0..<min(5, Int(table.u32(at: 8))) { table.put(0x7FFF_FFF0, at: 12 + 4 * entry) }
            }
        case .chunkOffsetsPastEnd:
            changed = file.edit(videoTable + ["stco"]) { table in
                for entry in 0..<Int(table.u32(at: 4)) { table.put(0x7FFF_FFFF - UInt32(entry), at: 8 + 4 * entry) }
            }
        case .absurdSampleCount:
            changed = file.edit(videoTable + ["stsz"]) { $0.put(0x3FFF_FFFF, at: 8) }
        case .noKeyframes:
            changed = file.edit(videoTable + ["stss"]) { $0 = Array($0[0..<4]) + [0, 0, 0, 0] }
        case .emptyMovie:
            changed = file.editChildren(["moov"]) { $0 = $0.filter { $0.type == "mvhd" } }
        case .twoMovies:
            let moov = try #require(file.boxes.first { $0.type == "moov" })
            var second = moov
            second.children = [MP4Box(type: "trak", payload: [UInt8](repeating: 0xFF, count: 64), offset: 0)]
            file.boxes.append(second)
        case .ftypOnly:
            file.boxes = file.boxes.filter { $0.type == "ftyp" }
        case .mdatOnly:
            file.boxes = file.boxes.filter { $0.type != "moov" }
            return (file.bytes, "mp4", ["corrupt_media"])
        case .audioOnly:
            var sound = Fixtures.clip(codec: "libx264", audio: .aac, container: "mp4")
            sound.hasVideo = false
            return (try bytes(of: Fixtures.path("corpus-sound.mp4", sound)), "mp4", ["no_video_stream"])
        case .singleFrame:
            var one = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: [.init(frames: 1)])
            one.container = "mp4"
            return (try bytes(of: Fixtures.path("corpus-one-frame.mp4", one)), "mp4", ["too_short"])
        case .thousandFramesPerSecond:
            var fast = SyntheticVideo(width: 64, height: 64, frameRate: 1000, scenes: [.init(frames: 800), .init(frames: 800, transitionIn: .cut)])
            fast.container = "mp4"
            fast.encoderOptions = ["preset": "ultrafast"]
            return (try bytes(of: Fixtures.path("corpus-1000fps.mp4", fast)), "mp4", nil)
        case .matroskaCutShort:
            let whole = try bytes(of: Fixtures.path("corpus.mkv", Fixtures.clip(codec: "libx264", audio: .aac, container: "matroska")))
            return (Array(whole.prefix(whole.count / 3)), "mkv", nil)
        case .transportStreamWithHoles:
            let whole = try bytes(of: Fixtures.path("corpus.ts", Fixtures.clip(codec: "libx264", audio: .aac, container: "mpegts")))
            let packets = stride(from: 0, to: whole.count, by: 188).filter { ($0 / 188) % 5 != 3 }
            return (packets.flatMap { whole[$0..<min($0 + 188, whole.count)] }, "ts", nil)
        case .hlsPlaylist:
            return (Array("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3.0,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n".utf8), "m3u8", ["not_a_video"])
        case .concatPlaylist:
            return (Array("ffconcat version 1.0\nfile 'input.mp4'\nfile '/etc/passwd'\n".utf8), "mp4", ["not_a_video"])
        case .sdpSession:
            return (
                Array("v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\n".utf8),
                "sdp", ["not_a_video"]
            )
        }
        try #require(changed, "\(c): the base clip lacks the box this case damages")
        return (file.bytes, "mp4", nil)
    }

    static func bytes(of path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test("each file ends in a coded error or a valid highlight, within 60 s and the memory limit", arguments: Case.allCases)
    func corpus(_ c: Case) throws {
        let (bytes, ext, codes) = try Self.make(c)
        // Bits flipped in the samples stay flipped where the highlight copies the source's own
        // packets: the decoder conceals them there as it does in the source.
        let concealed = c.rawValue.hasPrefix("flippedSamples")
        let outcome = try Self.check(bytes, ext: ext, name: c.rawValue, damagedSamples: concealed)
        if let codes { #expect(outcome.code.map(codes.contains) == true, "\(c): ended in \(outcome.code ?? "a highlight"), expected \(codes)") }
    }

    @Test("the clip cut short at the start of every box (nested ones too), and in the middle of each")
    func truncations() throws {
        let base = try Self.bytes(of: try Self.base())
        let file = try MP4File(try Self.base())
        let starts = Set(file.boxes.flatMap(\.offsets)).filter { $0 > 0 }.sorted()
        let cuts = Set(starts + zip([0] + starts, starts + [base.count]).map { ($0 + $1) / 2 }).filter { $0 > 0 && $0 < base.count }.sorted()
        #expect(cuts.count >= 40, "the clip has \(starts.count) boxes")
        var outcomes: [String: Int] = [:]
        for cut in cuts {
            let outcome = try Self.check(Array(base.prefix(cut)), ext: "mp4", name: "cut at \(cut) of \(base.count)")
            outcomes[outcome.code ?? "highlight", default: 0] += 1
        }
        // With the index at the end, a cut before it leaves no index: a damaged file, never "not a video".
        #expect(outcomes["not_a_video"] == nil, "\(outcomes)")
    }

    @Test("every input that once crashed, leaked or hung the fuzzing target (Fuzz/regressions)")
    func fuzzingRegressions() throws {
        let folder = TestServices.repository.appendingPathComponent("Fuzz/regressions")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!names.isEmpty)
        for name in names {
            _ = try Self.check(try Self.bytes(of: folder.appendingPathComponent(name).path), ext: "bin", name: "Fuzz/regressions/\(name)")
        }
    }

    /// Runs `moments highlight` on the bytes under a kill timer and the memory meter; checks the
    /// outcome and returns the code (nil for a highlight).
    static func check(_ bytes: [UInt8], ext: String, name: String, damagedSamples: Bool = false) throws -> (code: String?, peakMB: Double) {
        let folder = Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("input.\(ext)"), output = folder.appendingPathComponent("out.mp4")
        try Data(bytes).write(to: input)
        let report = folder.appendingPathComponent("rss")
        let started = ContinuousClock.now
        let result = try run(
            "/usr/bin/time",
            [
                "-f", "%M %x", "-o", report.path, "timeout", "-s", "KILL", "60", momentsBinary,
                "highlight", input.path, "-o", output.path,
            ])
        let elapsed = started.duration(to: .now)
        let figures = try String(contentsOf: report, encoding: .utf8).split(separator: "\n").last?.split(separator: " ") ?? []
        let peakMB = (figures.first.flatMap { Double($0) } ?? .infinity) / 1024
        #expect(peakMB < memoryLimitMB, "\(name): peak RSS \(peakMB) MB")
        #expect(
            result.status == 0 || result.status == 1,
            "\(name): exit \(result.status) after \(elapsed) (124/137: killed at 60 s; over 128: a signal)\n\(result.stderr.suffix(2000))")
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("[") && !$0.hasPrefix("Command exited") }
        if result.status == 0 {
            let probe = try Probe(output.path)
            #expect(probe.video != nil && probe.duration > 0, "\(name): the highlight has no video")
            // Every packet, at its own time (passthrough: no frame-rate conversion by the checker).
            let decode = try run("ffmpeg", ["-v", "error", "-i", output.path, "-vsync", "passthrough", "-f", "null", "-"]).stderr
                .split(separator: "\n").filter { !(damagedSamples && $0.hasPrefix("[h264 @")) }
            #expect(decode.isEmpty, "\(name): the highlight does not decode cleanly: \(decode.prefix(6))")
            return (nil, peakMB)
        }
        let errors = lines.filter { $0.hasPrefix("error: ") }
        let code = errors.first.flatMap { $0.dropFirst(7).split(separator: ":").first.map(String.init) }
        #expect(errors.count == 1 && code.map { ErrorCode(rawValue: $0) != nil } == true, "\(name): \(result.stderr.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: output.path), "\(name): an output despite the error")
        return (code, peakMB)
    }
}
