import Foundation
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

/// `moments analyze|highlight --timeline FORMAT FILE` on footage with a camera timecode, read back
/// by OpenTimelineIO's adapters.
@Suite("Timeline export from the command line", .heavy)
struct TimelineExportTests {
    /// 12 s at 30 fps in four shots, recorded from timecode 01:00:10:00 (frame 108 300).
    static var timecoded: SyntheticVideo {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: [
                .init(frames: 90, camera: .still, toneHz: 220),
                .init(frames: 90, camera: .pan(pixelsPerFrame: 2), transitionIn: .cut, toneHz: 277),
                .init(frames: 90, camera: .shaky(amplitude: 3), transitionIn: .cut, toneHz: 330),
                .init(frames: 90, camera: .pan(pixelsPerFrame: -2), transitionIn: .cut, toneHz: 415),
            ])
        video.gopSize = 30
        video.container = "mov"
        video.timecode = "01:00:10:00"
        return video
    }

    @Test("analyze --timeline: the selected segments at the camera's timecode, in all three formats")
    func analyzeWritesTimelines() throws {
        let input = try Fixtures.path("timecoded.mov", Self.timecoded)
        let folder = Fixtures.scratch()
        var selected: [(start: Double, end: Double)] = []
        for format in ["edl", "fcpxml", "otio"] {
            let file = folder.appendingPathComponent("cut.\(format)").path
            let result = try run(momentsBinary, ["analyze", input, "--duration", "6", "--json", "--timeline", format, file])
            try #require(result.status == 0, "\(result.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect((report["input"] as? [String: Any])?["start_timecode"] as? String == "01:00:10:00", "the probe reads the tmcd track")
            selected = (report["selected"] as? [[String: Any]] ?? []).map { ($0["start"] as? Double ?? 0, $0["end"] as? Double ?? 0) }
            try #require(selected.count >= 2)
            let timeline = try TimelineReader.read(format, file, rate: 30)
            let video = try #require(timeline.tracks.first { $0.kind == "Video" }?.clips)
            #expect(video.count == selected.count)
            for (clip, segment) in zip(video, selected) {
                let start = 108_300 + (segment.start * 30).rounded(), length = (segment.end * 30).rounded() - (segment.start * 30).rounded()
                // EDL and OTIO are exact; the FCP X adapter truncates times to whole frames.
                let slack = format == "fcpxml" ? 1.0 : 0
                #expect(abs(clip.start - start) <= slack && abs(clip.duration - length) <= slack, "\(format): \(clip) for \(segment)")
            }
            if format == "otio" || format == "edl" {
                #expect(video.allSatisfy { $0.targetURL?.hasSuffix("timecoded.mov") == true }, "\(format): the file")
            }
        }
        let wrong = try run(momentsBinary, ["analyze", input, "--timeline", "aaf", folder.appendingPathComponent("x").path])
        #expect(wrong.status != 0 && wrong.stderr.contains("--timeline's format must be edl, fcpxml or otio"), "\(wrong.stderr)")
        let half = try run(momentsBinary, ["analyze", input, "--timeline", "edl"])
        #expect(half.status != 0 && half.stderr.contains("--timeline takes a format and a file"), "\(half.stderr)")
    }

    @Test("highlight --timeline: the rendered segments (moved onto keyframes when copied)")
    func highlightWritesTimeline() throws {
        let input = try Fixtures.path("timecoded.mov", Self.timecoded)
        let folder = Fixtures.scratch()
        let file = folder.appendingPathComponent("cut.otio").path
        let report = folder.appendingPathComponent("report.json").path
        let result = try run(
            momentsBinary,
            [
                "highlight", input, "-o", folder.appendingPathComponent("h.mp4").path, "--duration", "6",
                "--report", report, "--timeline", "otio", file,
            ])
        try #require(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let segments = (json["segments"] as? [[String: Any]] ?? []).map { ($0["start"] as? Double ?? 0, $0["end"] as? Double ?? 0) }
        let video = try #require(try TimelineReader.read("otio", file).tracks.first?.clips)
        #expect(video.map(\.start) == segments.map { 108_300 + ($0.0 * 30).rounded() })
    }
}
