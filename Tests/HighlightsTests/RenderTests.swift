import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("Render", .heavy)
struct RenderTests {
    @Test("a highlight is an AVPlayer-ready MP4 of the target length, in sync")
    func highlightFile() throws {
        let source = try Fixtures.path("event.mp4", Fixtures.event)
        let output = Fixtures.scratch().appendingPathComponent("event-highlight.mp4").path
        let report = try HighlightEngine().highlight(
            input: source, output: output,
            settings: HighlightSettings(duration: 10, quality: .low))
        let probe = try Probe(output)
        #expect(abs(probe.duration - 10) <= 0.5, "duration \(probe.duration)")
        #expect(abs(report.output.duration - 10) <= 0.5)
        let video = try #require(probe.video), audio = try #require(probe.audio)
        #expect(video["codec_name"] == "h264")
        #expect(video["pix_fmt"] == "yuv420p")
        #expect(video["width"] == "320" && video["height"] == "180")
        #expect(audio["codec_name"] == "aac" && audio["profile"] == "LC")
        #expect(audio["sample_rate"] == "48000" && audio["channels"] == "2")
        // moov before mdat (faststart).
        let boxes = try topLevelBoxes(output)
        let moov = try #require(boxes.firstIndex(of: "moov")), mdat = try #require(boxes.firstIndex(of: "mdat"))
        #expect(moov < mdat, "boxes \(boxes)")
        // Decodes completely without a single error.
        let decode = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
        // The two streams end together.
        let videoDuration = Double(video["duration"] ?? "") ?? 0, audioDuration = Double(audio["duration"] ?? "") ?? 0
        #expect(abs(videoDuration - audioDuration) < 0.05, "video \(videoDuration) s, audio \(audioDuration) s")
        // The report accounts for the run.
        #expect(!report.segments.isEmpty && report.timings.total > 0 && report.realTimeFactor > 0)
    }

    @Test("audio stays on the video's clock: the event's first burst lands where its segment puts it")
    func audioInSync() throws {
        let source = try Fixtures.path("event.mp4", Fixtures.event)
        let output = Fixtures.scratch().appendingPathComponent("sync.mp4").path
        let report = try HighlightEngine().highlight(input: source, output: output, settings: HighlightSettings(duration: 10, quality: .low))
        let event = try #require(Fixtures.event.eventTimes.first)
        // Source time of the first burst that a selected segment shows (bursts every 0.25 s from the event start).
        var outputOffset = 0.0
        var burstAt: Double?
        for segment in report.segments {
            var t = event.lowerBound
            while t < event.upperBound {
                if t >= segment.start + 0.3 && t < segment.end - 0.3 { burstAt = outputOffset + (t - segment.start); break }
                t += 0.25
            }
            if burstAt != nil { break }
            outputOffset += segment.duration
        }
        let at = try #require(burstAt, "no segment shows an event burst")
        let samples = try decodedAudio(output)
        let rate = 8000.0
        // Just before the burst: the quiet tone (or the previous burst's tail, 0.2 s decayed); just after: the burst.
        let before = rms(samples[max(0, Int((at - 0.06) * rate))..<Int((at - 0.01) * rate)])
        let after = rms(samples[Int((at + 0.002) * rate)..<Int((at + 0.04) * rate)])
        #expect(after > 4 * before, "burst expected at \(at) s: rms before \(before), after \(after)")
    }

    /// MPEG-TS finds a time by searching the file and can land past the keyframe before it: every
    /// segment must still show all its pictures (`Fixtures.scenes`: 20 s at 30 fps, here 3 s GOPs).
    @Test("MPEG-TS with long GOPs: every segment shows every picture from its first")
    func transportStreamSeeks() throws {
        var video = Fixtures.scenes(gop: 90)
        video.container = "mpegts"
        let source = try Fixtures.path("scenes-gop90.ts", video)
        let output = Fixtures.scratch().appendingPathComponent("ts-highlight.mp4").path
        let report = try HighlightEngine().highlight(input: source, output: output, settings: HighlightSettings(duration: 10, quality: .low))
        #expect(report.segments.contains { ($0.start * 30).rounded().truncatingRemainder(dividingBy: 90) != 0 }, "a segment starts mid-GOP")
        let times = try frameHashes(output).map(\.time)
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect((gaps.max() ?? 1) < 1.5 / 30, "the longest gap between pictures is \(gaps.max() ?? 0) s")
        let expected = report.segments.reduce(0) { $0 + Int(($1.end * 30).rounded() - ($1.start * 30).rounded()) }
        #expect(times.count == expected, "\(times.count) pictures, the segments hold \(expected)")
    }

    /// Every picture is reachable by a seek: from the first (whose time, turned into seconds and
    /// back, once fell a tick short of it) to keyframes and mid-GOP times, in MPEG-TS (whose seek
    /// lands on a decode time two B-frames past the keyframe) and in MP4.
    @Test("a seek for decoding reaches the picture asked for, in every container", arguments: ["mpegts", "mp4", "matroska"])
    func seekReachesEveryPicture(container: String) throws {
        var video = Fixtures.scenes(gop: 45)
        video.container = container
        let source = try Fixtures.path("scenes-gop45.\(container)", video)
        let analysis = try HighlightEngine().analyze(input: source)
        let (input, info, stream, _) = try MediaProbe.open(source, limits: MediaLimits())
        input.discardAll(except: [stream.index])
        let decoder = try Media.Decoder(stream: stream, options: .video(for: info, threads: 2, analysis: false))
        let frame = Frame(), packet = Packet()
        for index in [0, 1, 44, 45, 46, 100, 135, 300, 599] {
            let wanted = analysis.frameTimes[index]
            try input.seek(stream, toDecode: wanted + analysis.origin, index: analysis.packets)
            decoder.flush()
            var first: Double?
            func take(_ decoded: Frame) {
                guard first == nil, let ticks = decoded.timestamp else { return }
                let t = stream.seconds(ticks) - analysis.origin
                if t >= wanted - 1e-6 { first = t }
            }
            while first == nil {
                guard try input.read(into: packet) else {
                    try decoder.decode(nil, into: frame, take)
                    break
                }
                if packet.streamIndex == stream.index { try decoder.decode(packet, into: frame, take) }
            }
            #expect(
                first.map { abs($0 - wanted) < 1e-6 } == true,
                "frame \(index) at \(wanted) s: the first picture decoded at or after it is at \(String(describing: first))")
        }
    }

    @Test(
        "a portrait phone clip keeps its display matrix on both paths and shows upright",
        arguments: [(VideoCodecChoice.auto, RenderMode.copy), (.h264, .encode)])
    func rotation(codec: VideoCodecChoice, mode: RenderMode) throws {
        var video = Fixtures.clip(codec: "libx264", audio: .aac, container: "mov", frames: 60)
        video.rotation = 90
        video.orientationMarker = true
        let source = try Fixtures.path("portrait.mov", video)
        let analysis = try HighlightEngine().analyze(input: source)
        #expect(analysis.info.rotation == 90)
        #expect(analysis.info.displayWidth == 180 && analysis.info.displayHeight == 320)
        let output = Fixtures.scratch().appendingPathComponent("portrait-\(codec).mp4").path
        let report = try HighlightEngine().highlight(input: source, output: output, settings: HighlightSettings(codec: codec))
        #expect(report.render.mode == mode, "\(report.render.reason)")
        #expect(report.output.width == 180 && report.output.height == 320)
        // Stored as recorded (landscape), with the source's display matrix: a quarter turn clockwise
        // (ffprobe writes it as -90), which AVPlayer and ffmpeg apply.
        let stream = try #require(try Probe(output).video)
        #expect(stream["width"] == "320" && stream["height"] == "180")
        let sideData = try run(
            "ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream_side_data=rotation", "-of", "csv=p=0", output]
        ).stdout
        #expect(sideData.trimmingCharacters(in: .whitespacesAndNewlines) == "-90", "side data: \(sideData)")
        // Shown upright: the marker (white, luma 235, a tenth of the stored width: 32 px) down the
        // stored picture's left edge is across the top 32 rows once ffmpeg applies the matrix.
        let grey = try firstFrameGrey(output, width: 180, height: 320)
        #expect(grey.count == 180 * 320)
        let top = grey[0..<(180 * 8)].map(Int.init).reduce(0, +) / (180 * 8)
        let bottom = grey[(180 * 312)..<(180 * 320)].map(Int.init).reduce(0, +) / (180 * 8)
        #expect(top > 200 && top > bottom + 40, "top rows \(top), bottom rows \(bottom)")
    }

    @Test("a source without sound gets a silent AAC track")
    func silentSource() throws {
        let source = try Fixtures.path("silent.mp4", Fixtures.clip(codec: "libx264", audio: nil, container: nil, frames: 60))
        let output = Fixtures.scratch().appendingPathComponent("silent-highlight.mp4").path
        let report = try HighlightEngine().highlight(input: source, output: output)
        #expect(report.output.silentAudio && !report.input.hasAudio)
        let probe = try Probe(output)
        #expect(probe.audio?["codec_name"] == "aac")
        let samples = try decodedAudio(output)
        #expect(!samples.isEmpty && samples.allSatisfy { $0 == 0 })
        #expect(abs(probe.duration - 4) <= 0.1, "the whole 4 s source, got \(probe.duration)")
    }

    @Test(
        "HEVC 10-bit, odd sizes and non-square pixels render to upright yuv420p with even sides",
        arguments: [
            ("hevc10.mkv", "libx265", "yuv420p10le", 320, 180, (1, 1), 320, 180),
            ("odd.mp4", "libx264", "yuv444p", 321, 179, (1, 1), 320, 178),
            ("anamorphic.mp4", "libx264", "yuv420p", 240, 180, (4, 3), 320, 180),
        ] as [(String, String, String, Int, Int, (Int, Int), Int, Int)])
    func unusualPictures(name: String, codec: String, format: String, width: Int, height: Int, sar: (Int, Int), outWidth: Int, outHeight: Int) throws
    {
        var video = Fixtures.clip(
            codec: codec, pixelFormat: format, audio: .aac, container: nil,
            options: codec == "libx265" ? ["preset": "ultrafast", "x265-params": "log-level=none"] : ["preset": "veryfast"])
        video.width = width
        video.height = height
        video.sampleAspectRatio = sar
        let source = try Fixtures.path(name, video)
        let output = Fixtures.scratch().appendingPathComponent("out-\(name).mp4").path
        _ = try HighlightEngine().highlight(input: source, output: output)
        let stream = try #require(try Probe(output).video)
        #expect(stream["pix_fmt"] == "yuv420p")
        #expect(stream["width"] == "\(outWidth)" && stream["height"] == "\(outHeight)", "\(stream["width"] ?? "?")×\(stream["height"] ?? "?")")
        let decode = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.stderr.isEmpty, "\(decode.stderr)")
    }

    @Test(
        "quality bounds the long side and never upscales",
        arguments: [
            (1920, 1080, 0, Quality.high, 1920, 1080), (1920, 1080, 0, .medium, 1280, 720), (1920, 1080, 0, .low, 854, 480),
            (1280, 720, 0, .high, 1280, 720), (1920, 1080, 90, .medium, 720, 1280), (3840, 2160, 270, .high, 1080, 1920),
        ])
    func geometry(width: Int, height: Int, rotation: Int, quality: Quality, outWidth: Int, outHeight: Int) {
        let g = OutputGeometry(width: width, height: height, sampleAspectRatio: 1, rotation: rotation, quality: quality)
        #expect(g.width == outWidth && g.height == outHeight, "\(g.width)×\(g.height)")
    }
}
