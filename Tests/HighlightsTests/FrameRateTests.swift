import Foundation
import HighlightChecks
import MediaTestSupport
import MomentsModel
import Testing

@testable import Highlights

/// `fps`: a source faster than 33 pictures a second shows every second (third, fourth) picture
/// under the default `30`, and all of them under `source`.
@Suite("Frame rate: fps=30 and fps=source", .heavy)
struct FrameRateTests {
    @Test("the step brings every rate from 33 to 240 fps to 31 or under, and no lower than it must")
    func steps() {
        for hundredths in stride(from: 2_000, through: 24_000, by: 7) {
            let rate = Double(hundredths) / 100
            let plan = FrameRatePlan(sourceRate: rate, choice: .upTo30)
            #expect(FrameRatePlan(sourceRate: rate, choice: .source).step == 1)
            if rate <= FrameRateChoice.fastestKept {
                #expect(plan.step == 1, "\(rate) fps keeps every picture")
                continue
            }
            #expect(plan.outputRate <= 31 + 1e-9, "\(rate) fps → \(plan.outputRate)")
            // One step fewer would be over 31 (or keep every picture of a source over 33).
            #expect(plan.step == 2 || rate / Double(plan.step - 1) > 31, "\(rate) fps, step \(plan.step)")
        }
        #expect(FrameRatePlan(sourceRate: 60, choice: .upTo30).step == 2)
        #expect(FrameRatePlan(sourceRate: 60000.0 / 1001, choice: .upTo30).step == 2)
        #expect(FrameRatePlan(sourceRate: 50, choice: .upTo30).step == 2)
        #expect(FrameRatePlan(sourceRate: 120, choice: .upTo30).step == 4)
        #expect(FrameRatePlan(sourceRate: 90, choice: .upTo30).step == 3)
        #expect(FrameRatePlan(sourceRate: 60.4, choice: .upTo30).step == 2)
        #expect(FrameRatePlan(sourceRate: 30.01, choice: .upTo30).step == 1)
        #expect(FrameRatePlan(sourceRate: .nan, choice: .upTo30).step == 1)
    }

    /// Pictures of a constant-rate source at a random phase to the segment's start, each timestamp
    /// off by up to a fifth of a frame (rounded to milliseconds, as Matroska stores them, is a
    /// thirtieth at 60 fps): up to 0.4 of a frame from the first picture, under the half the rule allows.
    @Test(
        "every step-th picture from the segment's first, whatever the phase and the timestamps' error",
        arguments: [48.0, 50, 60000.0 / 1001, 60, 90, 100, 120, 240])
    func shownPictures(rate: Double) {
        var random = SystemRandomNumberGenerator()
        let plan = FrameRatePlan(sourceRate: rate, choice: .upTo30)
        let interval = 1 / rate
        for _ in 0..<200 {
            let first = Double.random(in: 0..<100, using: &random)
            let error = Double.random(in: 0...0.2, using: &random) * interval
            let times = (0..<600).map { first + Double($0) * interval + Double.random(in: -error...error, using: &random) }
            // Decoders may hand pictures over in any order: the answer is the picture's own.
            let shown = times.indices.shuffled(using: &random).filter { plan.shows(times[$0], anchor: times[0]) }.sorted()
            #expect(shown == Array(stride(from: 0, to: 600, by: plan.step)), "\(rate) fps, error \(error / interval) of a frame")
        }
    }

    /// A 60 fps source panning a picked pixel a frame, with sync marks on even and odd frames.
    static func source(fps: String) -> PipelineCase {
        var made = PipelineCase(seed: 0x60f9, budget: .suite)
        (made.width, made.height, made.pixelAspect, made.frameRate, made.ntsc, made.timing, made.rateRuns) = (
            320, 180, [1, 1], 60, false, "constant", []
        )
        (made.codec, made.bitDepth, made.fullChroma, made.gopFrames, made.openGOP, made.bFrames) = ("h264", 8, false, 60, false, 2)
        (made.container, made.rotation, made.audio, made.audioSeconds, made.startTime) = ("mp4", 0, "aac", nil, 0)
        made.scenes = (0..<3).map { index in
            var scene = made.scenes[index % made.scenes.count]
            (scene.frames, scene.transition, scene.transitionFrames, scene.camera, scene.light, scene.blur) = (300, "cut", 0, "pan", 1, 0)
            return scene
        }
        made.marks = [95, 181, 290, 421, 506, 611, 730, 845]
        made.events = []
        (made.target, made.quality, made.videoCodec, made.aspect) = (8, "low", "auto", "source")
        (made.minSegment, made.maxSegment, made.maxSegments, made.poster, made.thumbnails) = (nil, nil, nil, false, false)
        made.fps = fps
        return made
    }

    /// Each picture's time and its pixels (gray, 160 × 90: the pan moves a pixel a frame), as FFmpeg decodes the file.
    static func pictures(_ path: String, in folder: URL) throws -> [(time: Double, pixels: [UInt8])] {
        let raw = folder.appendingPathComponent(UUID().uuidString + ".gray")
        defer { try? FileManager.default.removeItem(at: raw) }
        let decoded = try run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-i", path, "-vf", "scale=160:90:flags=area,format=gray",
                "-fps_mode", "passthrough", "-f", "rawvideo", raw.path,
            ])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let probed = try run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=best_effort_timestamp_time",
                "-of", "csv=p=0", path,
            ])
        // A picture with side data gets a line "time," and an empty one.
        let times = probed.stdout.split(separator: "\n").compactMap {
            $0.split(separator: ",").first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        let bytes = [UInt8](try Data(contentsOf: raw))
        let size = 160 * 90
        #expect(bytes.count == times.count * size, "\(bytes.count / size) pictures, \(times.count) times")
        return times.indices.filter { ($0 + 1) * size <= bytes.count }.map { (times[$0], Array(bytes[($0 * size)..<(($0 + 1) * size)])) }
    }

    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Int { zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) } }

    @Test(
        "60 fps under fps=30: 30 fps, every second picture, each the source's picture of its time; fps=source keeps 60",
        arguments: ["30", "source"])
    func sixty(fps: String) throws {
        let made = Self.source(fps: fps)
        let pipeline = PipelineRun(made, in: Fixtures.scratch())
        try pipeline.writeSource()
        defer { try? FileManager.default.removeItem(at: pipeline.folder) }
        let outcome = pipeline.run()
        guard case .made(let report) = outcome else {
            Issue.record("no highlight: \(outcome)")
            return
        }
        #expect(PipelineInvariants(pipeline).violations(of: outcome).isEmpty, "\(PipelineInvariants(pipeline).violations(of: outcome))")
        let step = fps == "30" ? 2 : 1
        #expect(report.render.pictureStep == step)
        #expect(abs(report.output.frameRate - 60 / Double(step)) < 0.01, "\(report.output.frameRate)")
        if fps == "30" {
            #expect(report.render.mode == .encode, "\(report.render.reason)")
            // x264's pyramid of two B-frames leaves one in three pictures unreferred to.
            #expect(report.render.skippedPictures > 0, "no picture was left undecoded")
        }
        let stated = try run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=avg_frame_rate", "-of", "csv=p=0",
                pipeline.output,
            ]
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").compactMap { Double($0) }
        #expect(stated.count == 2 && abs(stated[0] / stated[1] - 60 / Double(step)) < 0.05, "the file says \(stated) fps")

        let source = try Self.pictures(pipeline.source, in: pipeline.folder), output = try Self.pictures(pipeline.output, in: pipeline.folder)
        let sourceStart = try #require(source.first?.time), outputStart = try #require(output.first?.time)
        var outputAt = 0.0, checked = 0
        for segment in report.segments {
            let inside = output.filter { $0.time - outputStart >= outputAt - 1e-6 && $0.time - outputStart < outputAt + segment.duration - 1e-6 }
            let expected = source.filter { $0.time - sourceStart >= segment.start - 1e-6 && $0.time - sourceStart < segment.end - 1e-6 }
            #expect(
                inside.count == (expected.count + step - 1) / step,
                "segment \(segment.start)–\(segment.end): \(inside.count) pictures of its \(expected.count) at 60 fps")
            for (n, picture) in inside.enumerated() {
                // Its time in the source, and the source's picture there: closer to it than to the
                // pictures a frame before and after (the pan moves a pixel a frame).
                let k = n * step
                guard k < expected.count else { break }
                let time = segment.start + (picture.time - outputStart - outputAt)
                #expect(abs(expected[k].time - sourceStart - time) < 0.5 / 60, "picture \(n) of the segment at \(time) s")
                let here = Self.distance(picture.pixels, expected[k].pixels)
                for neighbour in [k - 1, k + 1] where expected.indices.contains(neighbour) {
                    #expect(
                        here < Self.distance(picture.pixels, expected[neighbour].pixels),
                        "output \(picture.time) s looks more like source frame \(neighbour) than \(k) of segment \(segment.start)")
                }
                checked += 1
            }
            outputAt += segment.duration
        }
        #expect(checked >= Int(made.target * 60) / step - 2 * report.segments.count)
    }
}
