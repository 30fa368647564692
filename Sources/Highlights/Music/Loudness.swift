import Foundation

/// Integrated loudness after ITU-R BS.1770-4 (EBU R128's measure), of 48 kHz stereo: K-weighted,
/// in blocks of 400 ms every 100 ms, gated at −70 LUFS and then 10 LU under the loudness of the
/// blocks above that. `ffmpeg -af ebur128` measures the same way.
enum Loudness {
    static let sampleRate = 48_000

    /// LUFS of `left`/`right`; nil for silence (no block above −70 LUFS) or under 400 ms of sound.
    static func integrated(_ left: [Float], _ right: [Float]) -> Double? {
        let powers = blockPowers(left, right)
        let loudEnough = powers.filter { lufs($0) > -70 }
        guard !loudEnough.isEmpty else { return nil }
        let relativeGate = lufs(loudEnough.reduce(0, +) / Double(loudEnough.count)) - 10
        let gated = loudEnough.filter { lufs($0) > relativeGate }
        return lufs(gated.reduce(0, +) / Double(gated.count))
    }

    /// The mean square (both channels summed) of each 400 ms block, every 100 ms, after K-weighting.
    static func blockPowers(_ left: [Float], _ right: [Float]) -> [Double] {
        let count = min(left.count, right.count)
        let block = sampleRate * 4 / 10, hop = sampleRate / 10
        guard count >= block else { return [] }
        // The squares of each 100 ms step, summed; a block is four steps.
        var steps: [Double] = []
        for channel in [left, right] {
            var filter = KWeighting()
            var sum = 0.0, filled = 0, index = 0
            for n in 0..<count {
                let y = filter.next(Double(channel[n]))
                sum += y * y
                filled += 1
                if filled == hop {
                    if index < steps.count { steps[index] += sum } else { steps.append(sum) }
                    index += 1
                    sum = 0
                    filled = 0
                }
            }
        }
        guard steps.count >= 4 else { return [] }
        return (0...(steps.count - 4)).map { k in steps[k..<(k + 4)].reduce(0, +) / Double(block) }
    }

    static func lufs(_ power: Double) -> Double { -0.691 + 10 * log10(max(power, 1e-20)) }

    static func gain(decibels: Double) -> Float { Float(pow(10, decibels / 20)) }
}

/// BS.1770's K-weighting at 48 kHz: a high shelf (+4 dB above ~1.5 kHz, the head's effect) then a
/// high pass at ~38 Hz, each a biquad with the standard's coefficients.
struct KWeighting {
    private var shelf = Biquad(
        b0: 1.53512485958697, b1: -2.69169618940638, b2: 1.19839281085285,
        a1: -1.69065929318241, a2: 0.73248077421585)
    private var highPass = Biquad(b0: 1, b1: -2, b2: 1, a1: -1.99004745483398, a2: 0.99007225036621)

    mutating func next(_ x: Double) -> Double { highPass.process(shelf.process(x)) }
}

/// Keeps stereo samples under a ceiling without clipping: where a sample would pass it, the gain
/// falls to just what is needed, reached 2 ms before the peak and let go over 60 ms after, both
/// as straight ramps (no step in the gain, so no click and no pumping at the pace of a beat).
enum Limiter {
    /// −1 dBFS: AAC's decoder may overshoot a full-scale peak between samples.
    static let ceiling: Float = 0.89

    static func apply(_ left: inout [Float], _ right: inout [Float], ceiling: Float = Limiter.ceiling) {
        let count = min(left.count, right.count)
        guard count > 0 else { return }
        var needed = [Float](repeating: 1, count: count)
        var any = false
        for n in 0..<count {
            let peak = max(abs(left[n]), abs(right[n]))
            if peak > ceiling { needed[n] = ceiling / peak; any = true }
        }
        guard any else { return }
        let attack = Float(1) / Float(Loudness.sampleRate * 2 / 1000)
        let release = Float(1) / Float(Loudness.sampleRate * 60 / 1000)
        // Backwards: the gain is down by the time a peak comes; forwards: it comes back slowly.
        var gain = needed
        for n in stride(from: count - 2, through: 0, by: -1) { gain[n] = min(gain[n], gain[n + 1] + attack) }
        for n in 1..<count { gain[n] = min(gain[n], gain[n - 1] + release) }
        for n in 0..<count {
            left[n] *= gain[n]
            right[n] *= gain[n]
        }
    }
}
