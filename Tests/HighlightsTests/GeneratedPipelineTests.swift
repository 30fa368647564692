import Foundation
import HighlightChecks
import MediaSynth
import MediaTestSupport
import ServiceTestSupport
import Testing

/// The whole engine (analysis, selection, render, poster, thumbnails, timelines) on generated
/// sources and settings, each checked against every invariant of `PipelineInvariants`: a fixed set
/// drawn from one seed whose frame rates, codecs, containers, rotations, sound and frame shapes
/// cycle through every choice, and every case the soak (`scripts/soak`) ever found failing.
@Suite("The whole pipeline on generated inputs", .heavy)
struct GeneratedPipelineTests {
    static let fixedSet = PipelineCase.fixedSet(count: 27)

    /// Where `scripts/soak` writes what it finds: each case's JSON, and its source when small.
    static let regressionFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("PipelineRegressions")

    static var regressions: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: regressionFolder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    /// Runs `pipelineCase` in a scratch folder, its source from `stored` or made (once) by our encoder.
    static func violations(of pipelineCase: PipelineCase, stored: URL? = nil) throws -> [String] {
        let run = PipelineRun(pipelineCase, in: Fixtures.scratch())
        try FileManager.default.createDirectory(at: run.folder, withIntermediateDirectories: true)
        let source = try stored.map(\.path) ?? Fixtures.path(pipelineCase.sourceName, pipelineCase.video)
        try FileManager.default.copyItem(atPath: source, toPath: run.source)
        defer { try? FileManager.default.removeItem(at: run.folder) }
        return PipelineInvariants(run).violations(of: run.run())
    }

    @Test("every invariant holds on the fixed set", arguments: fixedSet)
    func fixed(_ pipelineCase: PipelineCase) throws {
        let violations = try Self.violations(of: pipelineCase)
        #expect(violations.isEmpty, "\(pipelineCase.summary):\n\(violations.joined(separator: "\n"))")
    }

    @Test("the fixed set has every frame rate, codec, container, rotation, kind of sound and frame shape")
    func coverage() {
        let cases = Self.fixedSet
        for rate in PipelineCase.rates {
            #expect(cases.contains { ($0.frameRate, $0.ntsc, $0.timing) == rate }, "\(rate)")
        }
        for (codec, depth) in PipelineCase.codecs {
            #expect(cases.contains { $0.codec == codec && $0.bitDepth == depth }, "\(codec) \(depth)-bit")
        }
        for container in PipelineCase.containers { #expect(cases.contains { $0.container == container }, "\(container)") }
        for rotation in [0, 90, 180, 270] { #expect(cases.contains { $0.rotation == rotation }, "rotation \(rotation)") }
        for audio in ["aac", "none", "short"] { #expect(cases.contains { $0.audio == audio }, "audio \(audio)") }
        for aspect in ["source", "9:16", "1:1", "4:5", "16:9"] { #expect(cases.contains { $0.aspect == aspect }, "aspect \(aspect)") }
        #expect(cases.contains { $0.fullChroma && ($0.width % 2 == 1 || $0.height % 2 == 1) }, "an odd size")
        #expect(cases.contains { $0.openGOP } && cases.contains { !$0.openGOP } && cases.contains { $0.bFrames > 0 })
        #expect(cases.contains { $0.startTime > 0 }, "a start time other than zero")
        #expect(cases.contains { $0.pixelAspect != [1, 1] }, "non-square pixels")
        #expect(cases.contains { $0.frameRate >= 50 && $0.fps == "30" }, "fps=30 of a fast source")
        #expect(cases.contains { $0.frameRate >= 50 && $0.fps == "source" }, "fps=source of a fast source")
        #expect(cases.contains { $0.quality == "original" }, "quality=original")
    }

    /// Made by FFmpeg's own tools: 240 pictures (4 s) at 59.94 fps whose times are whole
    /// milliseconds in a 90 kHz track, the pictures from the 61st on 8.2 ms (half a frame) later,
    /// as a highlight's are when a join leaves its pictures off the source's grid. The soak (seed
    /// 5eed41c5) once reported such a highlight as not decoding: FFmpeg's null muxer, in its
    /// default time base of one tick a frame, saw two pictures round to the same tick.
    @Test("the decode check reports decoding errors, not the null muxer's rounding of good timestamps")
    func decodeCheckKeepsTheFilesTimes() throws {
        let folder = Fixtures.scratch()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("joined-59.94.mp4").path
        let made = try run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x36:rate=60000/1001", "-frames:v", "240",
                "-vf", "settb=1/90000,setpts=round((PTS*TB+if(gte(N\\,60)\\,0.0082\\,0))*1000)*90",
                "-fps_mode", "passthrough", "-c:v", "libx264", "-video_track_timescale", "90000", path,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        let inspected = try MediaInspection(path, audio: false)
        #expect(inspected.errors.isEmpty, "\(inspected.errors.prefix(3))")
        #expect(inspected.pictures.count == 240, "4 s at 59.94 fps: \(inspected.pictures.count) pictures")
    }

    @Test("every case the soak found failing holds now", arguments: regressions)
    func regression(_ name: String) throws {
        let data = try Data(contentsOf: Self.regressionFolder.appendingPathComponent(name))
        let finding = try JSONDecoder().decode(PipelineFinding.self, from: data)
        let stored = Self.regressionFolder.appendingPathComponent(finding.pipelineCase.sourceName)
        let violations = try Self.violations(
            of: finding.pipelineCase,
            stored: FileManager.default.fileExists(atPath: stored.path) ? stored : nil)
        let once = finding.violations.first ?? "?"
        #expect(violations.isEmpty, "\(name) (\(finding.pipelineCase.summary)), once: \(once); now:\n\(violations.joined(separator: "\n"))")
    }
}
