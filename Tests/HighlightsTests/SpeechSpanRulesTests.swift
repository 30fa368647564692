import Foundation
import MediaSynth
import Testing

@testable import Highlights

/// The span rules of the speech detector on frame features made by hand: voiced, gliding words of
/// any length at any place, the first and last frames included, over quiet or loud backgrounds.
@Suite("Speech spans: the rules on generated frames")
struct SpeechSpanRulesTests {
    /// 1–400 frames with runs of 1–40 frames, apart by 0–40, from the first frame on or after a
    /// random silence: three runs in four are words (loud, periodic frames whose pitch moves by up
    /// to 20 cents a frame and whose spectrum moves), one in four a loud periodic hum.
    static func frames(seed: UInt64) -> SpeechDetector {
        var rng = SplitMix64(seed: seed)
        let count = Int.random(in: 1...400, using: &rng)
        var loudness = [Float](repeating: -70, count: count), periodicity = [Float](repeating: 0, count: count)
        var pitch = [Float](repeating: 0, count: count), shapeChange = [Float](repeating: 0.2, count: count)
        var k = Bool.random(using: &rng) ? 0 : Int.random(in: 0...40, using: &rng)
        while k < count {
            let length = Int.random(in: 1...40, using: &rng), hum = Int.random(in: 0..<4, using: &rng) == 0
            var hz = Float.random(in: 90...300, using: &rng)
            for f in k..<min(count, k + length) {
                loudness[f] = Float.random(in: -30 ... -15, using: &rng)
                periodicity[f] = hum ? 0.95 : Float.random(in: 0.55...0.95, using: &rng)
                hz *= hum ? 1 : pow(2, Float.random(in: -20...20, using: &rng) / 1200)
                pitch[f] = hz
                shapeChange[f] = hum ? 0.1 : Float.random(in: 1...3, using: &rng)
            }
            k += length + Int.random(in: 0...40, using: &rng)
        }
        return SpeechDetector(loudness: loudness, periodicity: periodicity, pitch: pitch, shapeChange: shapeChange)
    }

    @Test("spans lie within the sound, in order and apart, for words at every place", arguments: 0..<2_000)
    func spansWithinTheSound(seed: UInt64) {
        let detector = Self.frames(seed: seed)
        let end = Double(detector.loudness.count) * SpeechDetector.frameSeconds + 0.02
        let spans = detector.spans(startTime: 0)
        for span in spans {
            #expect(span.start >= 0 && span.start < span.end && span.end <= end + 1e-9, "seed \(seed): \(span) outside 0…\(end)")
        }
        for (a, b) in zip(spans, spans.dropFirst()) {
            #expect(a.end <= b.start, "seed \(seed): \(a) and \(b) overlap")
        }
    }
}

/// The fall of the voice at a span's end (`SpeechSpan.fall`), on phrases made by hand.
@Suite("Speech spans: how far the voice fell at the end")
struct SpeechFallTests {
    /// A phrase of 90–300 voiced frames between silences: its pitch jitters by up to 20 cents
    /// around `base` Hz, and over its last `glide` frames (20–40) the base moves linearly by
    /// `semitones` (-4…9; down when positive) to the last frame.
    static func phrase(seed: UInt64) -> (detector: SpeechDetector, glide: Int, semitones: Double) {
        var rng = SplitMix64(seed: seed)
        let length = Int.random(in: 90...300, using: &rng), glide = Int.random(in: 20...40, using: &rng)
        let semitones = Double.random(in: -4...9, using: &rng), base = Double.random(in: 110...250, using: &rng)
        let silence = 50, count = silence + length + silence
        var loudness = [Float](repeating: -70, count: count), periodicity = [Float](repeating: 0, count: count)
        var pitch = [Float](repeating: 0, count: count), shapeChange = [Float](repeating: 0.2, count: count)
        for i in 0..<length {
            let f = silence + i
            let progress = max(0, Double(i - (length - glide)) / Double(glide - 1))
            let cents = -100 * semitones * progress + Double.random(in: -20...20, using: &rng)
            loudness[f] = Float.random(in: -30 ... -20, using: &rng)
            periodicity[f] = Float.random(in: 0.7...0.95, using: &rng)
            pitch[f] = Float(base * pow(2, cents / 1200))
            shapeChange[f] = Float.random(in: 1...3, using: &rng)
        }
        return (SpeechDetector(loudness: loudness, periodicity: periodicity, pitch: pitch, shapeChange: shapeChange), glide, semitones)
    }

    @Test("the fall is the glide over the last tenth of a second, within half a semitone", arguments: 0..<300)
    func fallOfTheGlide(seed: UInt64) throws {
        let (detector, glide, semitones) = Self.phrase(seed: seed)
        let spans = detector.spans(startTime: 0)
        try #require(spans.count == 1, "seed \(seed): one phrase, \(spans)")
        let fall = try #require(spans[0].fall, "seed \(seed): a phrase of voice has a fall")
        // The median of the last `finalFrames` sits half of them before the end: the glide has gone
        // (glide − finalFrames / 2 − 0.5) / (glide − 1) of its way there. The phrase's median stays in the jitter
        // around the base (the glide is under half the frames); the jitter moves it by 0.2 at most.
        let half = Double(SpeechDetector.finalFrames) / 2
        let expected = semitones * (Double(glide) - half - 0.5) / Double(glide - 1)
        #expect(abs(fall - expected) <= 0.5, "seed \(seed): fell \(fall) semitones, made \(expected)")
    }

    @Test("a span with fewer than twice `finalFrames` voiced frames has no fall")
    func tooLittleVoice() {
        let voice = 40..<(40 + 2 * SpeechDetector.finalFrames)
        let pitch = (0..<100).map { voice.contains($0) ? Float(150 + $0 % 3) : 0 }
        let detector = SpeechDetector(
            loudness: pitch.map { $0 > 0 ? -25 : -70 }, periodicity: pitch.map { $0 > 0 ? 0.9 : 0 }, pitch: pitch,
            shapeChange: pitch.map { $0 > 0 ? 2 : 0.2 })
        #expect(detector.fall(over: 0..<100, voiced: (0..<100).map { voice.dropLast().contains($0) }) == nil)
        #expect(detector.fall(over: 0..<100, voiced: (0..<100).map { voice.contains($0) }) != nil)
    }
}
