import Foundation
import MediaSynth
import Testing

@testable import Highlights

/// The beat tracker on generated sounds of every shape it might be fed: from a few samples to
/// seconds, silence before, after or throughout, clicks steady, jittered, bunched or at the very
/// ends, fed in chunks of any size. About one seed in seven has a beat the tracker reports; the
/// others must end in no grid, without a trap.
@Suite("Beats: the tracker's rules on generated sounds")
struct BeatTrackerRulesTests {
    static func sound(seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        let rate = Double(BeatTracker.sampleRate)
        let count = Int(rate * Double.random(in: 0.001...8, using: &rng))
        var samples = [Float](repeating: 0, count: count)
        let period = Double.random(in: 0.15...1.5, using: &rng)
        let jitter = Bool.random(using: &rng) ? 0 : Double.random(in: 0...0.2, using: &rng) * period
        let steady = Bool.random(using: &rng), kick = (Int.random(in: 200...800, using: &rng), Double.random(in: 40...200, using: &rng))
        var t = Bool.random(using: &rng) ? 0 : Double.random(in: 0...2, using: &rng)
        let end = Bool.random(using: &rng) ? Double(count) / rate : Double.random(in: 0...Double(count) / rate, using: &rng)
        let noise = Bool.random(using: &rng) ? Float.random(in: 0...0.05, using: &rng) : 0
        while t < end {
            let at = Int((t + Double.random(in: -jitter...jitter, using: &rng)) * rate)
            let (length, hz) = steady ? kick : (Int.random(in: 1...800, using: &rng), Double.random(in: 40...4_000, using: &rng))
            let level = Float.random(in: 0.05...1, using: &rng)
            for i in 0..<length where at + i >= 0 && at + i < count {
                samples[at + i] += level * Float(sin(2 * Double.pi * hz * Double(i) / rate)) * Float(exp(-Double(i) / Double(length) * 4))
            }
            t += period
        }
        if noise > 0 { for i in samples.indices { samples[i] += Float.random(in: -noise...noise, using: &rng) } }
        return samples
    }

    @Test("a grid, when there is one, has rising beats inside the sound and downbeats among them", arguments: 0..<200)
    func gridWithinTheSound(seed: UInt64) {
        let samples = Self.sound(seed: seed)
        var rng = SplitMix64(seed: seed ^ 0x5EED)
        let chunk = Int.random(in: 1...20_000, using: &rng)
        var tracker = BeatTracker()
        samples.withUnsafeBufferPointer { buffer in
            var start = 0
            while start < buffer.count {
                let end = min(buffer.count, start + chunk)
                tracker.feed(UnsafeBufferPointer(rebasing: buffer[start..<end]))
                start = end
            }
        }
        guard let grid = tracker.grid(startTime: 3) else { return }
        let seconds = Double(samples.count) / Double(BeatTracker.sampleRate)
        #expect(grid.tempo.isFinite && BeatTracker.tempos.contains(grid.tempo.rounded()), "seed \(seed): tempo \(grid.tempo)")
        #expect(grid.beats.count >= 4, "seed \(seed): \(grid.beats.count) beats")
        #expect(zip(grid.beats, grid.beats.dropFirst()).allSatisfy { $0 < $1 }, "seed \(seed): beats out of order")
        // A beat is placed within its frame (three quarters into it), and every frame lies within the sound.
        #expect(grid.beats.allSatisfy { $0 >= 3 && $0 <= 3 + seconds }, "seed \(seed): a beat outside 3…\(3 + seconds)")
        #expect(grid.downbeats.allSatisfy { grid.beats.contains($0) }, "seed \(seed): a downbeat that is no beat")
    }
}
