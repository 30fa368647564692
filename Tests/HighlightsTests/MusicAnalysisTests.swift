import Foundation
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

/// Music tracks written here by ffmpeg in the formats people keep music in, made on known beats
/// (new seeds every run), and every way a track can be unusable.
@Suite("Music: a track's beat, bars and loud sections; a bad track refused by its code", .heavy)
struct MusicAnalysisTests {
    static func path(_ name: String) -> String { Fixtures.scratch().appendingPathComponent(name).path }

    @Test("each format gives the beat and the bars the music was made on", arguments: ["mp3", "m4a", "ogg", "opus", "flac", "wav"])
    func formats(format: String) throws {
        var rng = SystemRandomNumberGenerator()
        // A seed that once failed (Vorbis silenced the moment before a bar, and the beat there
        // was dropped), then two new ones; `MOMENTS_BEAT_SEED=a,b` replays given seeds instead.
        for seed in Seeds.replayed("MOMENTS_BEAT_SEED") ?? [3_377_838_435_203_511_526, rng.next(), rng.next()] {
            var source = SplitMix64(seed: seed)
            let tempo = Double.random(in: 80...150, using: &source)
            let truth = BeatTrackerTests.steady(tempo, seconds: 24)
            let music = Sounds.normalised(Sounds.song(beats: truth, seconds: 24, swing: 0.5, using: &source), decibels: -14)
            let file = Self.path("track.\(format)")
            try Sounds.write(music, to: file, arguments: format == "opus" ? ["-c:a", "libopus"] : format == "ogg" ? ["-c:a", "libvorbis"] : [])
            let analysis = try MusicAnalyzer.analyse(path: file)
            let context = "seed \(seed), \(format): \(tempo) a minute"
            #expect(abs(analysis.duration - 24) < 0.1, "\(context): \(analysis.duration) s")
            #expect(analysis.loudness.count == 24, "\(context): \(analysis.loudness.count) seconds of loudness")
            let grid = analysis.tempo.map {
                BeatGrid(tempo: $0, beats: analysis.beats, downbeats: analysis.downbeats, strength: analysis.beatStrength ?? 0)
            }
            // (An encoder's delay left in would put every beat off: the share would be near 0.)
            BeatTrackerTests.check(grid, truth: truth, lead: 0, context: context)
            // At the music's own beat, the bars start where its chords change on every fourth beat.
            if let grid, abs(grid.tempo / tempo - 1) < 0.05 {
                let bars = stride(from: 0, to: truth.count, by: 4).map { truth[$0] }
                let onBar = grid.downbeats.filter { d in bars.contains { abs($0 - d) <= 0.05 } }.count
                #expect(
                    Double(onBar) >= 0.8 * Double(grid.downbeats.count), "\(context): \(onBar) of the downbeats \(grid.downbeats) on the bars \(bars)"
                )
            }
        }
    }

    @Test("a track with no steady beat is cut on its strong onsets")
    func onsetsWithoutBeat() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<4 {
            let seed = rng.next()
            var source = SplitMix64(seed: seed)
            // Clicks at random times, 0.3–1.5 s apart: loud events with no period.
            var hits: [Double] = []
            var t = Double.random(in: 0.2...1, using: &source)
            while t < 19 { hits.append(t); t += Double.random(in: 0.3...1.5, using: &source) }
            let track = Sounds.mix(
                Sounds.normalised(Sounds.clicks(beats: hits, seconds: 20, beatsPerBar: 1), decibels: -16),
                Sounds.normalised(Sounds.pinkNoise(seconds: 20, using: &source), decibels: -50))
            let file = Self.path("hits.flac")
            try Sounds.write(track, to: file)
            let analysis = try MusicAnalyzer.analyse(path: file)
            let context = "seed \(seed): hits \(hits), onsets \(analysis.onsets)"
            #expect(analysis.tempo == nil && analysis.beats.isEmpty && analysis.downbeats.isEmpty, "\(context): tempo \(analysis.tempo ?? 0)")
            let found = hits.filter { h in analysis.onsets.contains { abs($0 - h) <= 0.05 } }.count
            let onTime = analysis.onsets.filter { o in hits.contains { abs($0 - o) <= 0.05 } }.count
            #expect(Double(found) >= 0.9 * Double(hits.count) && Double(onTime) >= 0.9 * Double(analysis.onsets.count), "\(context)")
        }
    }

    @Test("a louder middle is the loud section")
    func loudSection() throws {
        var source = SplitMix64(seed: 11)
        let truth = BeatTrackerTests.steady(120, seconds: 30)
        var music = Sounds.normalised(Sounds.song(beats: truth, seconds: 30, swing: 0.5, using: &source), decibels: -20)
        for i in (12 * Sounds.rate)..<(20 * Sounds.rate) { music[i] *= 2.5 }  // +8 dB
        let file = Self.path("loud.wav")
        try Sounds.write(music, to: file)
        let sections = try MusicAnalyzer.analyse(path: file).loudSections
        #expect(sections.count == 1 && abs(sections[0].start - 12) <= 1 && abs(sections[0].end - 20) <= 1, "\(sections)")
    }

    enum Bad: String, CaseIterable, Sendable {
        case empty, text, missing, folder, video, short, long, noise, randomBytes, truncated
    }

    @Test("every bad track ends in its code and a sentence", arguments: Bad.allCases)
    func bad(_ bad: Bad) throws {
        let file = Self.path("bad-\(bad.rawValue)")
        var expected: Set<ErrorCode>
        switch bad {
        case .empty:
            try Data().write(to: URL(fileURLWithPath: file))
            expected = [.notAudio]
        case .text:
            try Data(String(repeating: "Happy birthday to you!\n", count: 400).utf8).write(to: URL(fileURLWithPath: file))
            expected = [.notAudio]
        case .missing:
            expected = [.ioError]
        case .folder:
            try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: true)
            expected = [.ioError]
        case .video:
            let result = try run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x90:rate=10:duration=12",
                    "-f", "lavfi", "-i", "sine=duration=12", "-shortest", "-f", "mp4", file,
                ])
            try #require(result.status == 0, "\(result.stderr)")
            expected = [.notAudio]
        case .short:
            try Sounds.write(Sounds.normalised(Sounds.clicks(beats: [0, 0.5, 1, 1.5, 2], seconds: 5), decibels: -20), to: file + ".mp3")
            try FileManager.default.moveItem(atPath: file + ".mp3", toPath: file)
            expected = [.tooShort]
        case .long:
            let result = try run(
                "ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000:duration=660", "-f", "wav", file])
            try #require(result.status == 0, "\(result.stderr)")
            expected = [.tooLong]
        case .noise:
            // Sound with no beat at all is a track: no tempo, no beats, and no error.
            var source = SplitMix64(seed: 3)
            try Sounds.write(Sounds.normalised(Sounds.pinkNoise(seconds: 12, using: &source), decibels: -20), to: file + ".flac")
            let analysis = try MusicAnalyzer.analyse(path: file + ".flac")
            #expect(
                analysis.tempo == nil && analysis.beats.isEmpty && abs(analysis.duration - 12) < 0.1, "\(analysis.tempo ?? 0), \(analysis.duration)")
            return
        case .randomBytes:
            var rng = SystemRandomNumberGenerator()
            for size in [100, 4_096, 65_536, 1_000_000] {
                let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
                try Data(bytes).write(to: URL(fileURLWithPath: file))
                Self.expectFailure(file, in: [.notAudio, .corruptMedia, .tooShort], "\(size) random bytes")
            }
            return
        case .truncated:
            // An M4A cut before its index: nothing can be read.
            var source = SplitMix64(seed: 5)
            try Sounds.write(Sounds.normalised(Sounds.song(seconds: 15, using: &source).samples, decibels: -20), to: file + ".m4a")
            let data = try Data(contentsOf: URL(fileURLWithPath: file + ".m4a"))
            try data.prefix(data.count / 3).write(to: URL(fileURLWithPath: file))
            expected = [.notAudio, .corruptMedia, .tooShort]
        }
        Self.expectFailure(file, in: expected, bad.rawValue)
    }

    static func expectFailure(_ file: String, in codes: Set<ErrorCode>, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let analysis = try MusicAnalyzer.analyse(path: file)
            Issue.record("\(context): analysed as \(analysis.duration) s", sourceLocation: sourceLocation)
        } catch {
            #expect(codes.contains(error.code), "\(context): \(error.code.rawValue): \(error.message)", sourceLocation: sourceLocation)
            #expect(error.message.hasSuffix(".") && error.message.count > 20, "\(context): \(error.message)", sourceLocation: sourceLocation)
        }
    }
}
