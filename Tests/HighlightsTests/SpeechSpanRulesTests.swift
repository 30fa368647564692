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
