import Foundation
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

/// Highlights made with a soundtrack: songs on known beats at random tempos (new seeds every run,
/// `MOMENTS_MUSIC_SEEDS` for more) under videos of shots of random lengths, each checked by what
/// ffmpeg reads back: where the pictures change, how loud it is, what the sound holds.
@Suite("Music under a highlight: cuts on its beat, mixed to −16 LUFS, ducked under speech", .heavy)
struct MusicHighlightTests {
    static let seeds = Int(ProcessInfo.processInfo.environment["MOMENTS_MUSIC_SEEDS"] ?? "") ?? 2

    /// A song on a steady beat at a random tempo (70–160 a minute), starting `lead` seconds in,
    /// written as a WAV: its path and beats (track seconds).
    static func song(seconds: Double, in folder: URL, using rng: inout SplitMix64) throws -> (path: String, beats: [Double]) {
        let tempo = Double.random(in: 70...160, using: &rng)
        let lead = Double.random(in: 0...0.8, using: &rng)
        let beats = BeatTrackerTests.steady(tempo, seconds: seconds - lead).map { $0 + lead }
        let music = Sounds.normalised(Sounds.song(beats: beats, seconds: seconds, swing: 0.5, using: &rng), decibels: -14)
        let path = folder.appendingPathComponent("song.wav").path
        try Sounds.write(music, to: path)
        return (path, beats)
    }

    /// A video of shots 2–8 s long (30 fps, a keyframe every second) with `sound` (16 kHz mono) as its soundtrack.
    static func video(seconds: Double, sound: [Float], in folder: URL, using rng: inout SplitMix64) throws -> String {
        var scenes: [SyntheticVideo.Scene] = []
        var frames = 0
        while Double(frames) < seconds * 30 {
            let length = min(Int(seconds * 30) - frames, Int.random(in: 60...240, using: &rng))
            scenes.append(SyntheticVideo.Scene(frames: max(30, length), camera: Bool.random(using: &rng) ? .still : .pan(pixelsPerFrame: 1)))
            frames += max(30, length)
        }
        var video = SyntheticVideo(width: 320, height: 180, frameRate: 30, scenes: scenes)
        video.gopSize = 30
        video.soundtrack = sound
        let path = folder.appendingPathComponent("video.mp4").path
        try video.write(to: path)
        return path
    }

    static func highlight(
        _ video: String, music: String, target: Double, keepSourceAudio: Bool = true,
        in folder: URL
    ) throws -> (report: HighlightReport, output: String) {
        let output = folder.appendingPathComponent("highlight.mp4").path
        var settings = HighlightSettings(duration: target)
        settings.music = MusicSettings(path: music, analysis: try MusicAnalyzer.analyse(path: music), keepSourceAudio: keepSourceAudio)
        return (try HighlightEngine().highlight(input: video, output: output, settings: settings), output)
    }

    /// Integrated loudness as ffmpeg's `ebur128` filter measures it.
    static func loudness(_ path: String) throws -> Double {
        let text = try run("ffmpeg", ["-hide_banner", "-nostats", "-i", path, "-af", "ebur128", "-f", "null", "-"]).stderr
        let summary = try #require(text.range(of: "Integrated loudness:").map { text[$0.upperBound...] })
        return try #require(summary.firstMatch(of: /I:\s+(-?[0-9.]+) LUFS/).flatMap { Double($0.output.1) })
    }

    @Test("every cut lands on a beat of the track, the pictures change there, the total is on the target, the mix is at −16 LUFS")
    func cutsOnTheBeat() throws {
        var random = SystemRandomNumberGenerator()
        // Seeds that once failed are replayed on every run.
        let remembered: [UInt64] = [4_295_568_531_636_026_380, 2_565_211_838_882_193_645, 1_437_491_904_132_253_479]
        for seed in remembered + (0..<Self.seeds).map({ _ in random.next() }) {
            var rng = SplitMix64(seed: seed)
            let folder = Fixtures.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (music, beats) = try Self.song(seconds: 60, in: folder, using: &rng)
            let room = Sounds.normalised(Sounds.pinkNoise(seconds: 50, using: &rng), decibels: -30)
            let video = try Self.video(seconds: 50, sound: room, in: folder, using: &rng)
            let target = Double(Int.random(in: 10...30, using: &rng))
            let (report, output) = try Self.highlight(video, music: music, target: target, in: folder)
            let context = "seed \(seed), target \(target)"
            let played = try #require(report.music, "\(context): no music in the report")
            #expect(played.cutsOn == "beat", "\(context)")
            // The track's true beats on the highlight's clock, at the level the tracker counts
            // (double time counts the hi-hats halfway between the kicks too, as the tracker's own
            // tests allow).
            let trueTempo = 60 / (beats[1] - beats[0])
            let double = abs((played.tempo ?? 0) / trueTempo - 2) < 0.1
            let onClock = (double ? beats + zip(beats, beats.dropFirst()).map { ($0 + $1) / 2 } : beats).map { $0 - played.trackStart }
            var elapsed = 0.0
            for (segment, cut) in zip(report.segments, played.cuts) {
                elapsed += segment.duration
                #expect(abs(cut.time - elapsed) < 1e-6, "\(context): the cut \(cut.time) is not where the segments end (\(elapsed))")
                let off = onClock.map { abs($0 - cut.time) }.min() ?? .infinity
                #expect(
                    cut.onBeat && off <= 1.0 / 30,
                    "\(context): the cut at \(cut.time) is \(off) s from the nearest beat; tempo \(trueTempo), found \(played.tempo ?? 0); true beats \(onClock.filter { abs($0 - cut.time) < 1.5 })"
                )
            }
            #expect(
                abs(elapsed - target) <= 0.5,
                "\(context): \(elapsed) s; \(report.segments.map { ($0.start, $0.end, $0.shot) }), \(played.cuts.map(\.moved)); shots \(report.scenes.map(\.time))"
            )
            #expect(abs(try Probe(output).duration - elapsed) <= 0.05, "\(context)")
            // A new picture starts at each cut: the first of the next segment (ffprobe's packet
            // times; framemd5 would round them to the frame rate's grid).
            let frames = try run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time", "-of", "csv=p=0", output])
                .stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            for cut in played.cuts.dropLast() {
                #expect(
                    frames.contains { abs($0 - cut.time) <= 0.002 },
                    "\(context): no picture starts at the cut \(cut.time): \(frames.filter { abs($0 - cut.time) < 0.1 }); \(report.segments.map { ($0.start, $0.end) }) moved \(played.cuts.map(\.moved))"
                )
            }
            // The music starts on a bar and the highlight ends on one, or on the beat nearest the target.
            #expect(played.cuts.last.map { $0.downbeat || abs($0.time - target) <= 0.5 } == true, "\(context)")
            let measured = try Self.loudness(output)
            #expect(abs(measured - MusicSettings.targetLoudness) <= 1, "\(context): \(measured) LUFS")
        }
    }

    @Test("music alone: what plays is the track from the start the report gives (cross-correlation), faded out over the last second")
    func theTrackPlays() throws {
        var random = SystemRandomNumberGenerator()
        let seed = random.next()
        var rng = SplitMix64(seed: seed)
        let folder = Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (music, _) = try Self.song(seconds: 40, in: folder, using: &rng)
        let speech = try Sounds.speech(seconds: 30, using: &rng).samples
        let video = try Self.video(seconds: 30, sound: speech, in: folder, using: &rng)
        let (report, output) = try Self.highlight(video, music: music, target: 15, keepSourceAudio: false, in: folder)
        let played = try #require(report.music)
        #expect(played.duckedForSpeech == 0, "the source's sound is left out: nothing to duck under")
        let heard = try decodedAudio(output), track = try decodedAudio(music)
        let rate = 8_000.0
        // Five seconds from the middle of the highlight, against the track around where the report says it is.
        let from = Int(5 * rate), length = Int(5 * rate)
        let piece = Array(heard[from..<from + length])
        var best = (lag: 0, score: -1.0)
        for lag in -400...400 {
            let at = Int(((played.trackStart + 5) * rate).rounded()) + lag
            guard at >= 0, at + length <= track.count else { continue }
            let other = track[at..<at + length]
            var dot = 0.0, a = 0.0, b = 0.0
            for (x, y) in zip(piece, other) { dot += Double(x * y); a += Double(x * x); b += Double(y * y) }
            let score = dot / max(1e-12, (a * b).squareRoot())
            if score > best.score { best = (lag, score) }
        }
        #expect(
            abs(best.lag) <= 2 && best.score >= 0.9, "seed \(seed): best match \(best.score) at \(Double(best.lag) / rate) s from the reported start")
        // The last 0.2 s is faded down to near silence; the second before the fade is not.
        let end = heard.count
        #expect(rms(heard[(end - 1_600)..<end]) < 0.25 * rms(heard[(end - 16_000)..<(end - 8_000)]), "seed \(seed)")
    }

    @Test("where someone speaks the music goes down by 10 dB or more, and the sentences stay audible over it")
    func duckedUnderSpeech() throws {
        var random = SystemRandomNumberGenerator()
        let seed = random.next()
        var rng = SplitMix64(seed: seed)
        let folder = Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (music, _) = try Self.song(seconds: 60, in: folder, using: &rng)
        // Sentences with pauses of 2–4 s over the first 18 s, then none: the highlight is the
        // whole 30 s video, so the music has room to come back up.
        var speech = [Float](repeating: 0, count: 30 * Sounds.rate)
        var sentences: [ClosedRange<Double>] = []
        var t = Double.random(in: 0.5...2, using: &rng)
        while true {
            let sentence = try Sounds.spoken(
                Sounds.sentences.randomElement(using: &rng)!, voice: Sounds.voices.randomElement(using: &rng)!,
                speed: Int.random(in: 130...190, using: &rng), pitch: Int.random(in: 25...75, using: &rng))
            let length = Double(sentence.count) / Double(Sounds.rate)
            guard t + length < 18 else { break }
            let at = Int(t * Double(Sounds.rate))
            for (i, x) in sentence.enumerated() { speech[at + i] += x }
            sentences.append(t...(t + length))
            t += length + Double.random(in: 2...4, using: &rng)
        }
        speech = Sounds.normalised(speech, decibels: -20)
        let sound = Sounds.mix(speech, Sounds.normalised(Sounds.pinkNoise(seconds: 30, using: &rng), decibels: -50))
        let video = try Self.video(seconds: 30, sound: sound, in: folder, using: &rng)
        let (report, output) = try Self.highlight(video, music: music, target: 30, in: folder)
        let played = try #require(report.music)
        #expect(played.duckedForSpeech > 0, "seed \(seed): nothing ducked")
        // The sentences on the highlight's clock.
        var spoken: [ClosedRange<Double>] = []
        var elapsed = 0.0
        for segment in report.segments {
            for s in sentences where s.upperBound > segment.start && s.lowerBound < segment.end {
                spoken.append(
                    (elapsed + max(s.lowerBound, segment.start) - segment.start)...(elapsed + min(s.upperBound, segment.end) - segment.start))
            }
            elapsed += segment.duration
        }
        // How loud the music is in a stretch: the output projected on the track there (speech is
        // not correlated with it).
        let heard = try decodedAudio(output), track = try decodedAudio(music)
        let rate = 8_000.0
        func musicGain(_ samples: [Int]) -> Double {
            var dot = 0.0, energy = 0.0
            for n in samples {
                let t = Int(((played.trackStart) * rate).rounded()) + n
                guard n < heard.count, t < track.count else { continue }
                dot += Double(heard[n] * track[t])
                energy += Double(track[t] * track[t])
            }
            return dot / max(energy, 1e-12)
        }
        let end = elapsed - 1.2
        let inSpeech = (0..<Int(end * rate)).filter { n in
            let t = Double(n) / rate
            return spoken.contains { $0.lowerBound + 0.3 <= t && t <= $0.upperBound - 0.1 }
        }
        let clear = (0..<Int(end * rate)).filter { n in
            let t = Double(n) / rate
            return !spoken.contains { $0.lowerBound - 0.5 <= t && t <= $0.upperBound + 0.6 }
        }
        guard inSpeech.count > Int(rate), clear.count > Int(rate) else {
            Issue.record("seed \(seed): too little speech (\(inSpeech.count)) or pause (\(clear.count)) in the highlight: \(spoken)")
            return
        }
        let depth = 20 * log10(musicGain(clear) / max(musicGain(inSpeech), 1e-9))
        #expect(depth >= 10, "seed \(seed): the music is \(depth) dB down under speech")
        let measured = try Self.loudness(output)
        #expect(abs(measured - MusicSettings.targetLoudness) <= 1, "seed \(seed): \(measured) LUFS")
    }
}
