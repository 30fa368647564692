import Foundation
import HighlightChecks
import MediaSynth
import ServiceTestSupport

/// Soundtracks made for the speech tests, 16 kHz mono, each with what it holds known by
/// construction: sentences spoken by espeak-ng (its voices, speeds and pitches varied) with pauses
/// between them, and sounds with no speech at all (music, wind, traffic, a crowd's babble).
public enum Sounds {
    public static let rate = 16_000

    public static let sentences = [
        "The boat left the harbour early in the morning.", "We watched it go, and then we walked back along the beach.",
        "Look at that, she is jumping into the water!", "Happy birthday to you, my dear friend.",
        "I can't believe how cold it is today.", "Come over here and see what the dog found.",
        "This is the best day of the whole summer holiday.", "Do you want to try again, or shall we go home?",
        "Wait, wait, let me get my camera ready first.", "Everyone say cheese, one, two, three.",
    ]
    public static let voices = ["en-us", "en-gb", "en-us+f2", "en-gb+m3", "en-us+f4", "de", "fr", "es", "en-gb-scotland+f3"]

    /// One sentence as espeak-ng speaks it, trimmed to where it is audible.
    public static func spoken(_ text: String, voice: String, speed: Int, pitch: Int) throws -> [Float] {
        let result = try captured("/usr/bin/espeak-ng", ["-v", voice, "-s", "\(speed)", "-p", "\(pitch)", "--stdout", text])
        guard result.status == 0 else { throw SoundError.tool("espeak-ng exited with \(result.status)") }
        let (samples, sourceRate) = try pcm16(result.output)
        let resampled = resample(samples, from: sourceRate, to: rate)
        guard let first = resampled.firstIndex(where: { abs($0) > 0.01 }), let last = resampled.lastIndex(where: { abs($0) > 0.01 }) else {
            return []
        }
        return Array(resampled[first...last])
    }

    /// Sentences with pauses of 0.35–1.5 s between them over `seconds`; the sentences' spans (seconds).
    public static func speech(seconds: Double, using rng: inout SplitMix64) throws -> (samples: [Float], sentences: [ClosedRange<Double>]) {
        var track = [Float](repeating: 0, count: Int(seconds * Double(rate)))
        var spans: [ClosedRange<Double>] = []
        var t = Double.random(in: 0.3...1.5, using: &rng)
        while true {
            let sentence = try spoken(
                sentences.randomElement(using: &rng)!, voice: voices.randomElement(using: &rng)!,
                speed: Int.random(in: 130...190, using: &rng), pitch: Int.random(in: 25...75, using: &rng))
            let length = Double(sentence.count) / Double(rate)
            guard t + length < seconds - 0.3 else { break }
            let at = Int(t * Double(rate))
            for (i, s) in sentence.enumerated() { track[at + i] += s }
            spans.append(t...(t + length))
            t += length + Double.random(in: 0.35...1.5, using: &rng)
        }
        return (normalised(track, decibels: -20), spans)
    }

    /// Pink noise (the hum of a room).
    public static func pinkNoise(seconds: Double, using rng: inout SplitMix64) -> [Float] {
        // Voss-McCartney: the sum of white sources renewed at halving rates.
        var rows = [Double](repeating: 0, count: 12)
        return (0..<Int(seconds * Double(rate))).map { n in
            for (k, _) in rows.enumerated() where n % (1 << k) == 0 { rows[k] = Double.random(in: -1...1, using: &rng) }
            return Float(rows.reduce(0, +) + Double.random(in: -1...1, using: &rng))
        }
    }

    /// A harmonic tone with an attack and a decay.
    private static func note(_ hz: Double, seconds: Double, harmonics: Int, decay: Double) -> [Float] {
        (0..<Int(seconds * Double(rate))).map { n in
            let t = Double(n) / Double(rate)
            let wave = (1...harmonics).reduce(0.0) { $0 + sin(2 * Double.pi * hz * Double($1) * t) / Double($1) }
            return Float(wave * min(1, t / 0.01) * exp(-t * decay))
        }
    }

    /// Music: a melody on a scale over chords, with kick drum and hi-hat on the beat.
    public static func music(seconds: Double, using rng: inout SplitMix64) -> [Float] {
        song(seconds: seconds, using: &rng).samples
    }

    /// `music`, with its beat: a kick at every multiple of `beat` seconds from 0 (70–160 a
    /// minute), a hi-hat half way between, notes of half a beat to two beats.
    public static func song(seconds: Double, using rng: inout SplitMix64) -> (samples: [Float], beat: Double) {
        var track = [Float](repeating: 0, count: Int(seconds * Double(rate)))
        func add(_ sound: [Float], at t: Double, gain: Float = 1) {
            let at = Int(t * Double(rate))
            for (i, s) in sound.enumerated() where at + i < track.count { track[at + i] += gain * s }
        }
        let beat = 60 / Double.random(in: 70...160, using: &rng)
        let root = Double.random(in: 180...400, using: &rng)
        let scale = [0, 2, 4, 5, 7, 9, 11, 12]
        var t = 0.0
        while t < seconds - 1 {
            let length = beat * [0.5, 1, 1, 2].randomElement(using: &rng)!
            let pitch = root * pow(2, Double(scale.randomElement(using: &rng)!) / 12)
            add(note(pitch, seconds: length, harmonics: 6, decay: Double.random(in: 0.5...4, using: &rng)), at: t)
            if Bool.random(using: &rng) {
                add(
                    note(root / 2 * pow(2, Double([0, 4, 7].randomElement(using: &rng)!) / 12), seconds: length, harmonics: 8, decay: 1), at: t,
                    gain: 0.7)
            }
            t += length
        }
        t = 0
        while t < seconds - 0.2 {
            let kick = (0..<Int(0.12 * Double(rate))).map { n -> Float in
                let k = Double(n) / Double(rate)
                return Float(1.5 * sin(2 * Double.pi * (60 + 100 * exp(-k * 30)) * k) * exp(-k * 20))
            }
            add(kick, at: t)
            let hat = (0..<Int(0.04 * Double(rate))).map { n in
                Float(Double.random(in: -0.5...0.5, using: &rng) * exp(-Double(n) / Double(rate) * 60))
            }
            add(hat, at: t + beat / 2)
            t += beat
        }
        return (track, beat)
    }

    /// Music on given beats (seconds), so that its tempo may change: a kick on each beat, a
    /// hi-hat `swing` of the way to the next (a half straight, two thirds swung), and a chord that
    /// changes on the first beat of every bar of four (beats 0, 4, 8, …).
    public static func song(beats: [Double], seconds: Double, swing: Double, using rng: inout SplitMix64) -> [Float] {
        var track = [Float](repeating: 0, count: Int(seconds * Double(rate)))
        func add(_ sound: [Float], at t: Double, gain: Float = 1) {
            let at = Int(t * Double(rate))
            for (i, s) in sound.enumerated() where at + i < track.count { track[at + i] += gain * s }
        }
        let root = Double.random(in: 180...400, using: &rng)
        var degree = -1
        for k in stride(from: 0, to: beats.count - 1, by: 4) {
            degree = [0, 2, 4, 5, 7, 9].filter { $0 != degree }.randomElement(using: &rng)!
            let end = beats[min(beats.count - 1, k + 4)]
            let hz = root * pow(2, Double(degree) / 12)
            add(note(hz, seconds: end - beats[k], harmonics: 6, decay: Double.random(in: 0.5...3, using: &rng)), at: beats[k], gain: 0.6)
        }
        for (k, t) in beats.enumerated() {
            let kick = (0..<Int(0.12 * Double(rate))).map { n -> Float in
                let x = Double(n) / Double(rate)
                return Float(1.5 * sin(2 * Double.pi * (60 + 100 * exp(-x * 30)) * x) * exp(-x * 20))
            }
            add(kick, at: t)
            if k + 1 < beats.count {
                let hat = (0..<Int(0.04 * Double(rate))).map { n in
                    Float(Double.random(in: -0.5...0.5, using: &rng) * exp(-Double(n) / Double(rate) * 60))
                }
                add(hat, at: t + swing * (beats[k + 1] - t))
            }
        }
        return track
    }

    /// A metronome: a 20 ms click of 1 kHz on each beat, of 1.5 kHz and louder on each bar's first.
    public static func clicks(beats: [Double], seconds: Double, beatsPerBar: Int = 4) -> [Float] {
        var track = [Float](repeating: 0, count: Int(seconds * Double(rate)))
        for (k, t) in beats.enumerated() {
            let downbeat = k % beatsPerBar == 0
            let at = Int(t * Double(rate))
            for n in 0..<Int(0.02 * Double(rate)) where at + n < track.count {
                let x = Double(n) / Double(rate)
                track[at + n] += Float((downbeat ? 1 : 0.6) * sin(2 * Double.pi * (downbeat ? 1_500 : 1_000) * x) * exp(-x * 150))
            }
        }
        return track
    }

    /// Writes 16 kHz mono samples to `path` with ffmpeg, in the format its extension names
    /// (`arguments` choose the codec where the extension allows several).
    public static func write(_ samples: [Float], to path: String, arguments: [String] = []) throws {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent("sound-\(UUID().uuidString).f32")
        defer { try? FileManager.default.removeItem(at: raw) }
        try samples.withUnsafeBufferPointer { try Data(buffer: $0).write(to: raw) }
        let result = try captured(
            "/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "f32le", "-ar", "\(rate)", "-ac", "1", "-i", raw.path] + arguments + [path])
        guard result.status == 0 else {
            throw SoundError.tool("ffmpeg exited with \(result.status): \(String(decoding: result.errors, as: UTF8.self))")
        }
    }

    /// Wind: low rumbling noise in gusts.
    public static func wind(seconds: Double, using rng: inout SplitMix64) -> [Float] {
        let noise = pinkNoise(seconds: seconds, using: &rng)
        let gusts = (0..<(Int(seconds * 2) + 2)).map { _ in Double.random(in: 0.2...1.5, using: &rng) }
        var smooth = 0.0
        return noise.enumerated().map { n, s in
            smooth += 0.15 * (Double(s) - smooth)  // one pole at about 400 Hz
            let position = Double(n) / Double(rate) * 2, i = Int(position)
            return Float(smooth * (gusts[i] + (gusts[i + 1] - gusts[i]) * (position - Double(i))))
        }
    }

    /// Traffic: rumble, engines passing (harmonic hum that glides as it passes) and a car horn.
    public static func traffic(seconds: Double, using rng: inout SplitMix64) -> [Float] {
        var track = wind(seconds: seconds, using: &rng).map { $0 * 3 }
        for _ in 0...Int(seconds / 4) {
            let centre = Double.random(in: 0...seconds, using: &rng), hz = Double.random(in: 30...90, using: &rng)
            var phase = 0.0
            for n in track.indices {
                let t = Double(n) / Double(rate)
                let envelope = exp(-pow((t - centre) / 1.5, 2))
                phase += 2 * Double.pi * hz * (1 + 0.05 * tanh((centre - t) * 2)) / Double(rate)
                guard envelope > 1e-3 else { continue }
                let hum = (1...7).reduce(0.0) { $0 + sin(Double($1) * phase) / Double($1) }
                track[n] += Float(envelope * (0.8 * hum + 0.3 * Double.random(in: -1...1, using: &rng)))
            }
        }
        let horn = note(Double.random(in: 350...500, using: &rng), seconds: 0.6, harmonics: 5, decay: 0)
        let at = Int(Double.random(in: 1...(seconds - 1), using: &rng) * Double(rate))
        for (i, s) in horn.enumerated() where at + i < track.count { track[at + i] += 2 * s }
        return track
    }

    /// A crowd: eight voices at once, never one alone.
    public static func crowd(seconds: Double, using rng: inout SplitMix64) throws -> [Float] {
        var track = [Float](repeating: 0, count: Int(seconds * Double(rate)))
        for _ in 0..<8 {
            var t = Double.random(in: -2...0, using: &rng)
            while t < seconds {
                let sentence = try spoken(
                    sentences.randomElement(using: &rng)!, voice: voices.randomElement(using: &rng)!,
                    speed: Int.random(in: 140...200, using: &rng), pitch: Int.random(in: 20...80, using: &rng))
                let at = Int(t * Double(rate))
                for (i, s) in sentence.enumerated() where at + i >= 0 && at + i < track.count { track[at + i] += s }
                t += Double(sentence.count) / Double(rate) + Double.random(in: 0...0.5, using: &rng)
            }
        }
        return track
    }

    /// `samples` scaled to an RMS level of `decibels` dBFS.
    public static func normalised(_ samples: [Float], decibels: Double) -> [Float] {
        let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
        let gain = Float(pow(10, decibels / 20) / max(rms, 1e-12))
        return samples.map { $0 * gain }
    }

    public static func mix(_ a: [Float], _ b: [Float]) -> [Float] { (0..<min(a.count, b.count)).map { a[$0] + b[$0] } }

    // MARK: WAV

    public enum SoundError: Error { case tool(String), format(String) }

    public static func pcm16(_ wav: Data) throws -> (samples: [Float], rate: Int) {
        let bytes = [UInt8](wav)
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        guard bytes.count > 44, bytes[0..<4] == [0x52, 0x49, 0x46, 0x46] else { throw SoundError.format("not a RIFF file") }
        var at = 12, sampleRate = 0
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
            // espeak-ng writes a data size of its maximum when it writes to a pipe: read to the end.
            let size = min(u32(at + 4), bytes.count - at - 8)
            if id == "fmt " { sampleRate = u32(at + 12) }
            if id == "data" {
                let samples = stride(from: at + 8, to: at + 8 + size - 1, by: 2).map {
                    Float(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) / 32768
                }
                return (samples, sampleRate)
            }
            at += 8 + size + (size & 1)
        }
        throw SoundError.format("no data chunk")
    }

    public static func resample(_ samples: [Float], from source: Int, to target: Int) -> [Float] {
        guard source != target, !samples.isEmpty else { return samples }
        let count = Int(Double(samples.count) * Double(target) / Double(source))
        return (0..<count).map { n in
            let position = Double(n) * Double(source) / Double(target), i = Int(position)
            let a = samples[i], b = i + 1 < samples.count ? samples[i + 1] : a
            return a + (b - a) * Float(position - Double(i))
        }
    }
}
