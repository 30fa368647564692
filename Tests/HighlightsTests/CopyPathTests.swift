import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("Copy path", .heavy)
struct CopyPathTests {
    enum Source: String, CaseIterable, CustomTestStringConvertible {
        case h264, hevc, portrait
        var testDescription: String { rawValue }

        var video: SyntheticVideo {
            var video = Fixtures.phone(hevc: self == .hevc)
            if self == .portrait { video.rotation = 90 }
            return video
        }

        func path() throws -> String { try Fixtures.path("phone-\(rawValue).mov", video) }
    }

    /// A highlight made from `source` through the copy path, with its report.
    static func copied(_ source: Source, duration: Double = 8) throws -> (input: String, output: String, report: HighlightReport) {
        let input = try source.path()
        let output = Fixtures.scratch().appendingPathComponent("copy-\(source.rawValue).mp4").path
        let report = try HighlightEngine().highlight(input: input, output: output, settings: HighlightSettings(duration: duration))
        return (input, output, report)
    }

    /// Where each segment starts in the highlight.
    static func outputStarts(_ report: HighlightReport) -> [Double] {
        var starts: [Double] = []
        var t = 0.0
        for segment in report.segments {
            starts.append(t)
            t += segment.duration
        }
        return starts
    }

    @Test("the fixtures are what the copy path is for: 1 s GOPs; HEVC with CRA pictures led by RASL pictures")
    func fixtures() throws {
        for source in [Source.h264, .hevc] {
            let analysis = try HighlightEngine().analyze(input: try source.path())
            let kinds = analysis.packets.entries.map(\.kind)
            let points = analysis.packets.randomAccessPoints
            // 600 frames in GOPs of 30: 20 random access points (x264 may add one at a cut).
            #expect(points.count >= 20 && points.count <= 24, "\(points.count) random access points")
            if source == .hevc {
                #expect(kinds.filter { $0 == .cra }.count >= 19)
                #expect(kinds.contains(.rasl))
                #expect(analysis.info.dynamicRange == "hlg" && analysis.info.bitDepth == 10)
            } else {
                #expect(kinds.allSatisfy { $0 == .idr || $0 == .other })
            }
        }
    }

    @Test(
        "copied output decodes without one error, keeps the codec, and every frame is the source's frame at that time",
        arguments: Source.allCases)
    func framesAreTheSource(_ source: Source) throws {
        let (input, output, report) = try Self.copied(source)
        #expect(report.render.mode == .copy, "\(report.render.reason)")
        #expect(abs(report.output.duration - 8) <= 0.5, "\(report.output.duration)")
        let decode = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
        let probe = try Probe(output)
        let stream = try #require(probe.video)
        #expect(stream["codec_name"] == (source == .hevc ? "hevc" : "h264"))
        #expect(stream["codec_tag_string"] == (source == .hevc ? "hvc1" : "avc1"))
        #expect(try topLevelBoxes(output).firstIndex(of: "moov")! < topLevelBoxes(output).firstIndex(of: "mdat")!)

        try Self.expectSourceFrames(input: input, output: output, report: report, frame: 1.0 / 30)
    }

    /// Every frame of `output` is the source's frame at the time its segment shows, and the
    /// segments show all of them (`frame`: the source's frame interval).
    static func expectSourceFrames(input: String, output: String, report: HighlightReport, frame: Double) throws {
        let sourceFrames = try frameHashes(input)
        let outputFrames = try frameHashes(output)
        let starts = Self.outputStarts(report)
        var expectedCount = 0
        for segment in report.segments {
            expectedCount += sourceFrames.filter { $0.time >= segment.start - frame / 2 && $0.time < segment.end - frame / 2 }.count
        }
        #expect(outputFrames.count == expectedCount, "\(outputFrames.count) frames, expected \(expectedCount)")
        var mismatches = 0
        for (time, hash) in outputFrames {
            guard let s = starts.lastIndex(where: { $0 <= time + frame / 2 }) else { mismatches += 1; continue }
            let wanted = report.segments[s].start + (time - starts[s])
            let match = sourceFrames.first { abs($0.time - wanted) < frame / 2 }
            if match?.hash != hash { mismatches += 1 }
        }
        #expect(mismatches == 0, "\(mismatches) of \(outputFrames.count) frames differ from the source at their time")
    }

    @Test("quality=original of 4K60 HLG HEVC: copied at its size and rate, HDR tags kept, every frame the source's, no decode error")
    func originalAt4K() throws {
        // 3 s as an iPhone records 4K60 HDR: 10-bit HLG HEVC, open GOPs of 1 s.
        let input = try Fixtures.path(
            "phone-hdr-4k60.mov",
            SyntheticVideo.phone(
                minutes: 0.05, hdr: true, width: 3840, height: 2160,
                frameRate: 60))
        let output = Fixtures.scratch().appendingPathComponent("original-4k60.mp4").path
        // fps=30 is the default; original keeps the source's rate whatever the choices say.
        let report = try HighlightEngine().highlight(input: input, output: output, settings: HighlightSettings(duration: 2, quality: .original))
        #expect(report.render.mode == .copy, "\(report.render.reason)")
        #expect(report.settings.fps == "source" && report.render.pictureStep == 1 && report.output.frameRate == 60)
        #expect(report.output.width == 3840 && report.output.height == 2160 && report.output.videoCodec == "hevc")
        let decode = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
        let stream = try #require(try Probe(output).video)
        #expect(stream["codec_tag_string"] == "hvc1" && stream["width"] == "3840" && stream["height"] == "2160")
        #expect(
            stream["color_transfer"] == "arib-std-b67" && stream["color_primaries"] == "bt2020" && stream["pix_fmt"] == "yuv420p10le",
            "\(stream)")
        #expect(stream["r_frame_rate"] == "60/1", "\(stream)")
        try Self.expectSourceFrames(input: input, output: output, report: report, frame: 1.0 / 60)
    }

    @Test(
        "the sound at every join is the source's sound at that picture's time (offset under one frame)",
        arguments: [Source.h264, .hevc])
    func audioInSyncAtJoins(_ source: Source) throws {
        let (input, output, report) = try Self.copied(source)
        try #require(report.segments.count >= 2, "a join needs two segments")
        let rate = 8000.0
        let sourceAudio = try decodedAudio(input)
        let outputAudio = try decodedAudio(output)
        for (s, start) in Self.outputStarts(report).enumerated() {
            // 0.3 s just after the join (past its 10 ms fade), against the source around the same moment.
            let out = Int((start + 0.05) * rate)
            let src = Int((report.segments[s].start + 0.05) * rate)
            let length = Int(0.3 * rate), margin = Int(0.1 * rate)
            guard out + length <= outputAudio.count, src - margin >= 0, src + length + margin <= sourceAudio.count else { continue }
            let (lag, correlation) = bestLag(
                outputAudio[out..<out + length], sourceAudio[src - margin..<src + length + margin],
                rate: rate, range: 0.1)
            let offset = lag - Double(margin) / rate
            #expect(correlation > 0.8, "segment \(s): the sound does not match the source (correlation \(correlation))")
            #expect(abs(offset) < 1.0 / 30, "segment \(s): audio is \(offset * 1000) ms off the pictures")
        }
    }

    @Test("HDR stays HDR: 10-bit HLG in, 10-bit HLG BT.2020 out, tagged in the stream")
    func hdrTagsKept() throws {
        let (_, output, report) = try Self.copied(.hevc)
        #expect(report.render.mode == .copy)
        let stream = try #require(try Probe(output).video)
        #expect(stream["pix_fmt"] == "yuv420p10le")
        #expect(stream["color_transfer"] == "arib-std-b67")
        #expect(stream["color_primaries"] == "bt2020")
        #expect(stream["color_space"] == "bt2020nc")
    }

    @Test("a CRA that starts a segment is rewritten as BLA and its RASL pictures dropped")
    func brokenLinks() throws {
        let input = try Source.hevc.path()
        let analysis = try HighlightEngine().analyze(input: input)
        let (_, output, report) = try Self.copied(.hevc)
        let file = try InputFile(path: output)
        let stream = try #require(file.bestStream(.video))
        let bitstream = try #require(stream.bitstream)
        let packet = Packet()
        var kinds: [Bitstream.PictureKind] = []
        while try file.read(into: packet) {
            if packet.streamIndex == stream.index { kinds.append(bitstream.pictureKind(packet.bytes)) }
        }
        // Each segment opens on a BLA (or the source's first IDR) and is never followed by a RASL
        // picture of that first GOP.
        let opens = kinds.indices.filter { kinds[$0] == .bla || kinds[$0] == .idr }
        #expect(opens.count == report.segments.count, "\(opens.count) openings for \(report.segments.count) segments")
        for open in opens {
            let gop = kinds[(open + 1)...].prefix { !$0.isRandomAccessPoint }
            #expect(!gop.contains(.rasl), "RASL picture after the BLA at packet \(open)")
        }
        // What was dropped: exactly the RASL pictures of each segment's first GOP.
        let copiedFrames = report.segments.reduce(0) { $0 + Int(($1.duration * 30).rounded()) }
        #expect(kinds.count == copiedFrames)
        #expect(analysis.packets.entries.contains { $0.kind == .rasl })
    }

    @Test("eligibility: long GOPs, codec=h264, other containers and sizes the quality must shrink are encoded")
    func eligibility() throws {
        // A 5 s GOP is too coarse to keep segments on their moments.
        // (no scene-cut keyframes: every 150th frame is one).
        var longGOP = Fixtures.scenes(gop: 150, options: SyntheticVideo.phoneX264Options)
        longGOP.container = "mov"
        let longPath = try Fixtures.path("long-gop.mov", longGOP)
        let output = Fixtures.scratch().appendingPathComponent("long-gop.mp4").path
        let report = try HighlightEngine().highlight(input: longPath, output: output, settings: HighlightSettings(duration: 8))
        #expect(report.render.mode == .encode)
        #expect(report.render.reason.contains("5.0 s apart"), "\(report.render.reason)")

        // codec=h264 re-encodes an HEVC HDR source to 8-bit H.264.
        let hevc = try Source.hevc.path()
        let h264Output = Fixtures.scratch().appendingPathComponent("h264.mp4").path
        let h264 = try HighlightEngine().highlight(input: hevc, output: h264Output, settings: HighlightSettings(duration: 8, codec: .h264))
        #expect(h264.render.mode == .encode && h264.output.videoCodec == "h264")
        let stream = try #require(try Probe(h264Output).video)
        #expect(stream["codec_name"] == "h264" && stream["pix_fmt"] == "yuv420p")
        // Encoding, segments still start on keyframes: no picture is decoded only to be thrown away.
        let hevcAnalysis = try HighlightEngine().analyze(input: hevc)
        let keyTimes = hevcAnalysis.packets.keyframes.map {
            hevcAnalysis.packets.seconds(hevcAnalysis.packets.entries[$0].pts) - hevcAnalysis.origin
        }
        #expect(h264.segments.allSatisfy { segment in keyTimes.contains { abs($0 - segment.start) < 1e-6 } }, "\(h264.segments)")
        #expect(abs(h264.output.duration - 8) <= 0.5)

        // The rules on their own, on a copyable analysis with one fact changed at a time.
        let analysis = try HighlightEngine().analyze(input: try Source.h264.path())
        let every = FrameRatePlan(sourceRate: analysis.info.frameRate, choice: .source)
        #expect(RenderDecision.decide(analysis, quality: .high, codec: .auto, frames: every).0.mode == .copy)
        var uhd = analysis
        (uhd.info.width, uhd.info.height, uhd.info.displayWidth, uhd.info.displayHeight) = (3840, 2160, 3840, 2160)
        let (decision, grid) = RenderDecision.decide(uhd, quality: .high, codec: .auto, frames: every)
        #expect(decision.mode == .encode && grid == nil && decision.reason.contains("scaled down"), "\(decision.reason)")
        #expect(RenderDecision.decide(analysis, quality: .low, codec: .auto, frames: every).0.mode == .copy, "320 px fits every quality")
        var matroska = analysis
        matroska.info.container = "matroska,webm"
        #expect(RenderDecision.decide(matroska, quality: .high, codec: .auto, frames: every).0.reason.contains("container"))
        var anamorphic = analysis
        anamorphic.info.sampleAspectRatio = 4.0 / 3
        #expect(RenderDecision.decide(anamorphic, quality: .high, codec: .auto, frames: every).0.mode == .encode)
        // Every second picture of 60 fps cannot be copied; all 60 can.
        var sixty = analysis
        sixty.info.frameRate = 60
        let halved = RenderDecision.decide(sixty, quality: .high, codec: .auto, frames: FrameRatePlan(sourceRate: 60, choice: .upTo30)).0
        #expect(halved.mode == .encode && halved.reason.contains("every second picture"), "\(halved.reason)")
        #expect(RenderDecision.decide(sixty, quality: .high, codec: .auto, frames: FrameRatePlan(sourceRate: 60, choice: .source)).0.mode == .copy)
    }

    @Test("segments sit on the keyframe grid, inside their shots, and the total stays on target")
    func alignment() throws {
        let input = try Source.h264.path()
        let analysis = try HighlightEngine().analyze(input: input)
        let (_, _, report) = try Self.copied(.h264, duration: 8)
        let keyTimes = analysis.packets.randomAccessPoints.map { analysis.packets.seconds(analysis.packets.entries[$0].pts) - analysis.origin }
        for segment in report.segments {
            #expect(keyTimes.contains { abs($0 - segment.start) < 1e-6 }, "segment starts at \(segment.start), not on a keyframe")
            let shot = try #require(analysis.shots.indices.contains(segment.shot) ? analysis.shots[segment.shot] : nil)
            #expect(segment.start >= shot.start - 1e-6 && segment.end <= max(shot.end, analysis.info.duration) + 1.0 / 30 + 1e-6)
        }
        #expect(report.render.edgeMoves.count == report.segments.count)
        #expect(report.render.edgeMoves.allSatisfy { abs($0.start) <= 1.0 + 1e-6 }, "\(report.render.edgeMoves)")
    }
}
