import Foundation
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

/// The speech detector on soundtracks made here (espeak-ng's sentences with known spans; music,
/// wind, traffic and a crowd with none), new seeds every run, and highlights whose edges must
/// then fall in the pauses.
@Suite("Speech: found, and never cut", .heavy)
struct SpeechTests {
    /// A seed per run (printed with every failure), so each run tries other sentences, voices and sounds.
    /// `MOMENTS_SPEECH_SEEDS` multiplies the count (a longer run by hand); `MOMENTS_SPEECH_SEED`
    /// replays the seeds a failure printed (one, or several separated by commas).
    static func seeds(_ count: Int) -> [UInt64] {
        if let listed = Seeds.replayed("MOMENTS_SPEECH_SEED") { return listed }
        var rng = SystemRandomNumberGenerator()
        let factor = ProcessInfo.processInfo.environment["MOMENTS_SPEECH_SEEDS"].flatMap(Int.init) ?? 1
        return (0..<count * max(1, factor)).map { _ in rng.next() }
    }

    static func spans(of samples: [Float]) -> [SpeechSpan] {
        var detector = SpeechDetector()
        samples.withUnsafeBufferPointer { detector.feed($0) }
        return detector.spans(startTime: 0)
    }

    static func overlap(_ spans: [SpeechSpan], _ range: ClosedRange<Double>) -> Double {
        spans.reduce(0) { $0 + max(0, min($1.end, range.upperBound) - max($1.start, range.lowerBound)) }
    }

    /// Seeds that once failed, replayed every run beside the new ones: over traffic, a span that
    /// reached from one sentence into the next, and one that grew across a 0.36 s pause; over
    /// music, a sentence of 3.3 s heard for 0.3 s; the lowest coverage seen, 0.78 over traffic and
    /// 0.80 over music (unvoiced consonants lost between words); over music, 1.59 s of held notes
    /// taken for speech in the pauses (a fresh-clone CI run, 2026-12-07).
    static let remembered: [UInt64] = [
        3_125_684_071_157_243_913, 17_730_419_657_495_503_710, 575_828_252_776_486_249,
        1_688_343_875_516_483_915, 5_685_552_893_723_851_834, 11_075_988_025_536_066_183,
    ]

    @Test(
        "sentences over room noise, music or traffic are found, and the pauses between them stay pauses",
        arguments: ["room", "music", "traffic"])
    func sentencesFound(background: String) throws {
        let replaying = ProcessInfo.processInfo.environment["MOMENTS_SPEECH_SEED"] != nil
        let replayed = replaying ? [] : Self.remembered
        var coverage: [Double] = [], inPauses: [Double] = []
        for seed in Self.seeds(2) + replayed {
            var rng = SplitMix64(seed: seed)
            let (speech, sentences) = try Sounds.speech(seconds: 25, using: &rng)
            let under: [Float]
            switch background {
            case "music": under = Sounds.normalised(Sounds.music(seconds: 25, using: &rng), decibels: -32)
            case "traffic": under = Sounds.normalised(Sounds.traffic(seconds: 25, using: &rng), decibels: -32)
            default: under = Sounds.normalised(Sounds.pinkNoise(seconds: 25, using: &rng), decibels: -45)
            }
            let found = Self.spans(of: Sounds.mix(speech, under))
            let context = "seed \(seed), \(background): sentences \(sentences.map { "\($0)" }), found \(found.map { ($0.start, $0.end) })"
            // The sentences are found for most of their length: the share lies at 0.78–0.99 per
            // seed (means 0.91–0.93, standard deviations 0.03–0.04, over 33 seeds of each
            // background), so each seed is held to 0.7 and the run's mean to 0.85 below.
            let covered = sentences.reduce(0) { $0 + Self.overlap(found, $1) } / sentences.reduce(0) { $0 + $1.upperBound - $1.lowerBound }
            coverage.append(covered)
            #expect(covered >= 0.7, "\(context): \(covered) of the speech found")
            // No speech is found more than a quarter second from a sentence, and no span bridges
            // two sentences (a pause of at least 0.35 s is left between them). Under music 12 dB
            // below the voice, a held note in a pause may still join two sentences' spans: the
            // detector decides per second, and such a second holds speech.
            let pauses = zip(sentences, sentences.dropFirst()).map { ($0.upperBound + 0.25)...max($0.upperBound + 0.25, $1.lowerBound - 0.25) }
            let spurious = pauses.reduce(0) { $0 + Self.overlap(found, $1) }
            inPauses.append(spurious)
            // None over room noise or traffic in 53 seeds each. Over music, at most 1.5 s in 53
            // seeds and 1.59 s in one other (remembered above): a seed is held to 2.5 s, and the
            // run's mean to 1.0 s below.
            #expect(spurious <= (background == "music" ? 2.5 : 0.5), "\(context): \(spurious) s of speech found in the pauses")
            for (a, b) in zip(sentences, sentences.dropFirst()) where background != "music" {
                #expect(!found.contains { $0.start < a.upperBound - 0.1 && $0.end > b.lowerBound + 0.1 }, "\(context): a span bridges \(a) and \(b)")
            }
        }
        let mean = coverage.reduce(0, +) / Double(max(1, coverage.count))
        #expect(mean >= 0.85, "\(background): \(mean) of the speech found on average, per seed \(coverage)")
        // (Not when seeds are replayed by hand: one seed's own figure is no mean.)
        let meanInPauses = inPauses.reduce(0, +) / Double(max(1, inPauses.count))
        #expect(replaying || meanInPauses <= 1.0, "\(background): \(meanInPauses) s of speech found in the pauses on average, per seed \(inPauses)")
    }

    /// The speech found in sounds of 20 s (new seeds every run): none in 32 of each of wind,
    /// traffic and a crowd; in generated music (chords over a kick drum and a hi-hat, the hardest
    /// of these) none in most, a second or two in some and up to 5.9 s in 2 of 32 (slow legato
    /// chords), so the bound is on the mean of six.
    @Test("music, wind, traffic and a crowd's babble are not speech", arguments: ["music", "wind", "traffic", "crowd"])
    func negatives(kind: String) throws {
        var found: [(seed: UInt64, seconds: Double, spans: [SpeechSpan])] = []
        for seed in Self.seeds(kind == "music" ? 6 : 4) {
            var rng = SplitMix64(seed: seed)
            let sound: [Float]
            switch kind {
            case "music": sound = Sounds.music(seconds: 20, using: &rng)
            case "wind": sound = Sounds.wind(seconds: 20, using: &rng)
            case "traffic": sound = Sounds.traffic(seconds: 20, using: &rng)
            default: sound = try Sounds.crowd(seconds: 20, using: &rng)
            }
            let spans = Self.spans(of: Sounds.normalised(sound, decibels: -20))
            found.append((seed, spans.reduce(0) { $0 + $1.duration }, spans))
        }
        let mean = found.reduce(0) { $0 + $1.seconds } / Double(found.count)
        #expect(
            mean <= (kind == "music" ? 2.5 : 0.5),
            "\(kind): \(mean) s of speech found per 20 s: \(found.map { "seed \($0.seed): \($0.spans.map { ($0.start, $0.end) })" })")
    }

    /// 40 s of shots (cuts every 5 s) under sentences with pauses: the highlight's edges must all
    /// fall in pauses, and every sentence it plays must play whole.
    func spokenVideo(seed: UInt64) throws -> (path: String, sentences: [ClosedRange<Double>], heard: [SpeechSpan]) {
        var rng = SplitMix64(seed: seed)
        let (speech, sentences) = try Sounds.speech(seconds: 40, using: &rng)
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: (0..<8).map { index in
                SyntheticVideo.Scene(frames: 150, camera: index % 2 == 0 ? .still : .pan(pixelsPerFrame: 1), toneHz: 200)
            })
        video.gopSize = 15
        let soundtrack = Sounds.mix(speech, Sounds.normalised(Sounds.pinkNoise(seconds: 40, using: &rng), decibels: -45))
        video.soundtrack = soundtrack
        let path = Fixtures.scratch().appendingPathComponent("spoken.mp4").path
        try video.write(to: path)
        return (path, sentences, Self.spans(of: soundtrack))
    }

    /// Seeds whose highlights once cut a sentence or missed the total, replayed every run: a low
    /// voice's last word after a breath, and a first word before one, left out of the speech
    /// (17425664846721452628, 17135541027540132967); sentences kept whole that left 1.2 s too
    /// much, one segment at a time (9910333208646637201).
    static let rememberedHighlights: [UInt64] = [17_425_664_846_721_452_628, 17_135_541_027_540_132_967, 9_910_333_208_646_637_201]

    @Test("no edge falls inside a sentence, and sentences play whole, on both render paths", arguments: [VideoCodecChoice.auto, .h264])
    func edgesInPauses(codec: VideoCodecChoice) throws {
        let replayed = ProcessInfo.processInfo.environment["MOMENTS_SPEECH_SEED"] == nil ? Self.rememberedHighlights : []
        for seed in Self.seeds(1) + replayed {
            let (path, sentences, heard) = try spokenVideo(seed: seed)
            let output = Fixtures.scratch().appendingPathComponent("highlight.mp4").path
            let report = try HighlightEngine().highlight(input: path, output: output, settings: HighlightSettings(duration: 15, codec: codec))
            let context =
                "seed \(seed), \(codec.rawValue) (\(report.render.mode.rawValue): \(report.render.reason)): sentences "
                + "\(sentences.map { "\($0)" }), heard \(heard.map { ($0.start, $0.end) }), segments \(report.segments.map { ($0.start, $0.end) })"
            // Sentences of 2–4 s with pauses of 0.35–1.5 s run through the whole source, so the
            // lengths whole sentences add up to are few: the total may miss by up to a second.
            #expect(abs(report.output.duration - 15) <= 1, "\(context): \(report.output.duration) s")
            for segment in report.segments {
                for edge in [segment.start, segment.end] {
                    #expect(!sentences.contains { $0.contains(edge) }, "\(context): the edge at \(edge) cuts a sentence")
                }
            }
            // Every sentence the highlight plays, it plays whole.
            for sentence in sentences where report.segments.contains(where: { $0.start < sentence.upperBound && sentence.lowerBound < $0.end }) {
                #expect(
                    report.segments.contains { $0.start <= sentence.lowerBound && sentence.upperBound <= $0.end },
                    "\(context): \(sentence) is played in part")
            }
            // The report agrees: no edge in speech (an utterance it counts as cut is two sentences
            // too long together for one segment, cut at the pause between them).
            let speech = try #require(report.speech, "\(context): no speech reported")
            #expect(speech.edgesInSpeech == 0 && speech.utterancesWhole > 0, "\(context): \(speech)")
            // Speaking is a reason the report gives.
            #expect(report.segments.contains { $0.reasons.contains { $0.hasPrefix("someone speaks") } }, "\(context)")
        }
    }
}
