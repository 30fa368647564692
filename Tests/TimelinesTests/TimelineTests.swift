import Foundation
import Testing

@testable import Timelines

@Suite("Timeline export formats")
struct TimelineTests {
    @Test("frame rates: NTSC rates exactly, the rest to whole frames; FCPXML frame durations")
    func frameRates() {
        #expect(FrameRate(29.97).numerator == 30000 && FrameRate(29.97).denominator == 1001)
        #expect(FrameRate(23.976).numerator == 24000 && FrameRate(59.94).timecodeBase == 60)
        #expect(FrameRate(30.02).numerator == 30 && FrameRate(30.02).denominator == 1)
        #expect(FrameRate(.nan).value == 30 && FrameRate(0).value == 30)
        #expect(FrameRate(30).frameDuration == "20/600s" && FrameRate(25).frameDuration == "24/600s")
        #expect(FrameRate(29.97).frameDuration == "1001/30000s")
        #expect(FrameRate(30).rational(95) == "19/6s" && FrameRate(30).rational(90) == "3s" && FrameRate(30).rational(0) == "0s")
        #expect(FrameRate(29.97).rational(30) == "1001/1000s")
    }

    @Test("timecodes: non-drop and drop-frame, both ways")
    func timecodes() {
        let thirty = FrameRate(30), ntsc = FrameRate(29.97)
        #expect(thirty.timecode(108_300) == "01:00:10:00")
        #expect(thirty.frames(timecode: "01:00:10:00") == 108_300)
        // Drop-frame: 00:01:00;00 and ;01 do not exist; the first frame of minute 1 is ;02.
        #expect(ntsc.timecode(1800, dropFrame: true) == "00:01:00;02")
        #expect(ntsc.frames(timecode: "00:01:00;02") == 1800)
        #expect(ntsc.timecode(17_982, dropFrame: true) == "00:10:00;00", "every tenth minute keeps its frames")
        for frame in [0, 1799, 1800, 5000, 17_981, 17_982, 107_892, 200_000] {
            #expect(ntsc.frames(timecode: ntsc.timecode(frame, dropFrame: true)) == frame, "frame \(frame)")
        }
        #expect(thirty.frames(timecode: "00:00:00:30") == nil && thirty.frames(timecode: "garbage") == nil)
        // Out of range, however large (hours past a day once overflowed the frame count and trapped).
        for text in ["24:00:00:00", "999999999999999:00:00:00", "-1:00:00:00", "00:-5:00:00", "00:00:60:00", "00:00:00:-1"] {
            #expect(thirty.frames(timecode: text) == nil, "\(text)")
        }
    }

    static let timeline = EditTimeline(
        name: "Beach & \"waves\" highlight", sourceName: "IMG_0042 <1>.MOV", sourceURL: "IMG_0042%20%3C1%3E.MOV",
        frameRate: 30, sourceDuration: 20, startTimecode: "01:00:10:00", hasAudio: true,
        width: 1920, height: 1080,
        clips: [.init(start: 1, end: 4.5), .init(start: 10, end: 12)])

    @Test("EDL: one cut event per clip, source timecodes from the camera's, record side back to back")
    func edl() {
        let lines = Self.timeline.render(.edl).components(separatedBy: "\r\n")
        #expect(lines[0] == "TITLE: Beach & \"waves\" highlight" && lines[1] == "FCM: NON-DROP FRAME")
        #expect(lines[3] == "001  AX       AA/V  C        01:00:11:00 01:00:14:15 00:00:00:00 00:00:03:15")
        #expect(lines[4] == "* FROM CLIP NAME: IMG_0042 <1>.MOV" && lines[5] == "* FROM FILE: IMG_0042 <1>.MOV")
        #expect(lines[7] == "002  AX       AA/V  C        01:00:20:00 01:00:22:00 00:00:03:15 00:00:05:15")
        var silent = Self.timeline
        silent.hasAudio = false
        #expect(silent.render(.edl).contains("001  AX       V     C "))
    }

    @Test("FCPXML: escaped names, the asset starting at the camera's timecode, clips back to back")
    func fcpxml() {
        let xml = Self.timeline.render(.fcpxml)
        #expect(xml.contains(#"<fcpxml version="1.10">"#))
        #expect(xml.contains(#"name="IMG_0042 &lt;1&gt;.MOV""#) && xml.contains(#"<project name="Beach &amp; &quot;waves&quot; highlight">"#))
        #expect(xml.contains(#"start="7220/2s""#) || xml.contains(#"start="3610s""#), "01:00:10:00 is 3610 s")
        #expect(xml.contains(#"offset="0s" name="IMG_0042 &lt;1&gt;.MOV" start="3611s" duration="7/2s""#))
        #expect(xml.contains(#"offset="7/2s" name="IMG_0042 &lt;1&gt;.MOV" start="3620s" duration="2s""#))
        #expect(xml.contains(#"<sequence format="r1" duration="11/2s""#))
    }

    @Test("OTIO: a video and an audio track of clips referencing the source, in frames at its rate")
    func otio() throws {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(Self.timeline.render(.otio).utf8)) as? [String: Any])
        #expect(json["OTIO_SCHEMA"] as? String == "Timeline.1")
        let tracks = try #require((json["tracks"] as? [String: Any])?["children"] as? [[String: Any]])
        #expect(tracks.map { $0["kind"] as? String } == ["Video", "Audio"])
        let clip = try #require((tracks[0]["children"] as? [[String: Any]])?.first)
        let range = try #require(clip["source_range"] as? [String: Any])
        #expect((range["start_time"] as? [String: Any])?["value"] as? Double == 108_330)
        #expect((range["duration"] as? [String: Any])?["value"] as? Double == 105)
    }
}
