import Foundation

/// A stretch of the soundtrack where someone speaks, in seconds of the video's timeline.
public struct SpeechSpan: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    /// How far the voice fell at the span's end: semitones from the median pitch of its voiced
    /// frames down to that of its last tenth of a second of voice (below zero: it rose); nil where
    /// it has too little voice to say. A statement ends with the voice falling, a clause before a
    /// comma level or rising (it goes on).
    public var fall: Double?
    public var duration: Double { end - start }

    public init(start: Double, end: Double, fall: Double? = nil) {
        self.start = start
        self.end = end
        self.fall = fall
    }
}

/// Finds speech in a 16 kHz mono soundtrack: voiced sound (periodic at 73–400 Hz) whose pitch
/// glides and whose spectral shape keeps changing, as articulation makes it, over at least a fifth
/// of a second.
///
/// Per 10 ms frame it keeps four numbers: the loudness, how periodic the sound is (normalised
/// autocorrelation of the 70–1000 Hz band at 8 kHz), the pitch, and how much the shape of the
/// spectrum (8 bands, 300–3400 Hz) moved over 20 ms. Over each second, speech is where the
/// voiced frames' pitch moves by 4–60 cents a frame (a held note moves by none; wind and noise by
/// hundreds, when they seem periodic at all) and the spectral shape by at least 1.3 dB a band:
/// a voice's formants move with every syllable, an instrument's timbre stays.
struct SpeechDetector {
    static let sampleRate = 16_000
    static let frameSeconds = 0.01
    /// Pauses shorter than this are inside a span.
    static let shortestPause = 0.15
    /// How far a span may grow over loud, half-periodic sound next to it.
    static let longestExtension = 0.6
    /// The fewest voiced frames in a row that may grow into the sound around them (50 ms).
    static let shortestWord = 5
    /// The longest quiet inside a word (a stop's closure, 60 ms) that its edges grow across.
    static let closure = 6
    /// How far above the quiet around it (dB) a consonant's burst after a closure is.
    static let burst: Float = 12
    /// The voiced frames at a span's end whose pitch says whether the voice fell (a tenth of a second).
    static let finalFrames = 10
    /// `longestExtension` in frames.
    static let reachFrames = Int(longestExtension / frameSeconds)

    private static let hop = 160
    private static let spectrumSize = 512
    private static let pitchWindow = 256
    private static let shortestLag = 20
    private static let longestLag = 110
    private static let bandCount = 8

    /// Per frame: loudness (dBFS), periodicity (0…1; 0 where no pitch was found), pitch (Hz) and
    /// spectral shape change (mean dB per band over 20 ms; nil until two frames are known).
    private(set) var loudness: [Float] = []
    private(set) var periodicity: [Float] = []
    private(set) var pitch: [Float] = []
    private(set) var shapeChange: [Float] = []

    private var raw: [Float] = []
    private var rawOffset = 0
    private var low: [Float] = []
    private var lowOffset = 0
    private var filters = [Biquad.highPass(70), .highPass(70), .lowPass(1000), .lowPass(1000)]
    private var decimate = false
    private var shapes: [[Float]] = []
    private let spectrum = RealSpectrum(size: SpeechDetector.spectrumSize)
    private let bandBins: [Range<Int>]
    private let hann: [Float]

    init() {
        let edges = (0...Self.bandCount).map { 300 * pow(3400.0 / 300, Double($0) / Double(Self.bandCount)) }
        let binHz = Double(Self.sampleRate) / Double(Self.spectrumSize)
        bandBins = (0..<Self.bandCount).map { Int((edges[$0] / binHz).rounded(.up))..<Int((edges[$0 + 1] / binHz).rounded(.up)) }
        hann = (0..<Self.spectrumSize).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(Self.spectrumSize))) }
    }

    /// A detector whose frames were measured already (one value per frame in each array), for
    /// deciding spans on features made by hand.
    init(loudness: [Float], periodicity: [Float], pitch: [Float], shapeChange: [Float]) {
        precondition(Set([loudness.count, periodicity.count, pitch.count, shapeChange.count]).count == 1, "one value per frame")
        self.init()
        self.loudness = loudness
        self.periodicity = periodicity
        self.pitch = pitch
        self.shapeChange = shapeChange
    }

    /// Adds samples (16 kHz mono) and measures every frame they complete.
    mutating func feed(_ samples: UnsafeBufferPointer<Float>) {
        raw.append(contentsOf: samples)
        for sample in samples {
            var y = Double(sample)
            for i in filters.indices { y = filters[i].process(y) }
            if decimate { low.append(Float(y)) }
            decimate.toggle()
        }
        while true {
            let k = loudness.count
            let rawStart = k * Self.hop - rawOffset, lowStart = k * Self.hop / 2 - lowOffset
            guard rawStart + Self.spectrumSize <= raw.count, lowStart + Self.pitchWindow + Self.longestLag <= low.count else { break }
            measure(rawStart: rawStart, lowStart: lowStart)
        }
        // Keep only what the next frames read.
        let rawUsed = loudness.count * Self.hop - rawOffset
        if rawUsed > 8192 { raw.removeFirst(rawUsed); rawOffset += rawUsed }
        let lowUsed = loudness.count * Self.hop / 2 - lowOffset
        if lowUsed > 4096 { low.removeFirst(lowUsed); lowOffset += lowUsed }
    }

    private mutating func measure(rawStart: Int, lowStart: Int) {
        var energy: Float = 0
        for i in rawStart..<(rawStart + Self.hop) { energy += raw[i] * raw[i] }
        loudness.append(10 * log10(energy / Float(Self.hop) + 1e-10))

        // Periodicity: the highest normalised autocorrelation at lags of 73–400 Hz, counted only
        // where it rises again after a dip (noise heavy in low frequencies correlates at every
        // short lag without one).
        let found = low.withUnsafeBufferPointer { buffer -> (Float, Float) in
            let w = UnsafeBufferPointer(rebasing: buffer[lowStart..<(lowStart + Self.pitchWindow + Self.longestLag)])
            var e0: Float = 0
            for i in 0..<Self.pitchWindow { e0 += w[i] * w[i] }
            guard e0 > 1e-9 else { return (0, 0) }
            var shifted: Float = 0
            for i in Self.shortestLag..<(Self.shortestLag + Self.pitchWindow) { shifted += w[i] * w[i] }
            var r = [Float](repeating: 0, count: Self.longestLag - Self.shortestLag + 1)
            for lag in Self.shortestLag...Self.longestLag {
                if lag > Self.shortestLag {
                    shifted += w[lag + Self.pitchWindow - 1] * w[lag + Self.pitchWindow - 1] - w[lag - 1] * w[lag - 1]
                }
                var dot: Float = 0
                for i in 0..<Self.pitchWindow { dot += w[i] * w[i + lag] }
                r[lag - Self.shortestLag] = dot / (e0 * max(shifted, 0) + 1e-12).squareRoot()
            }
            var best = 0
            for i in r.indices where r[i] > r[best] { best = i }
            guard best > 0, best < r.count - 1, r[best] - (r[0...best].min() ?? 0) >= 0.2 else { return (0, 0) }
            let (a, b, c) = (r[best - 1], r[best], r[best + 1])
            let offset = 0.5 * (a - c) / (a - 2 * b + c - 1e-12)
            return (b, 8000 / (Float(best + Self.shortestLag) + max(-0.5, min(0.5, offset))))
        }
        periodicity.append(found.0)
        pitch.append(found.1)

        // Spectral shape: log energies of the bands, less their mean.
        var windowed = [Float](repeating: 0, count: Self.spectrumSize)
        for i in 0..<Self.spectrumSize { windowed[i] = raw[rawStart + i] * hann[i] }
        let power = spectrum.power(of: windowed)
        var shape = bandBins.map { bins -> Float in 10 * log10(bins.reduce(Float(0)) { $0 + power[$1] } + 1e-10) }
        let mean = shape.reduce(0, +) / Float(shape.count)
        for i in shape.indices { shape[i] -= mean }
        if shapes.count == 2 {
            shapeChange.append(zip(shape, shapes[0]).reduce(Float(0)) { $0 + abs($1.0 - $1.1) } / Float(shape.count))
            shapes.removeFirst()
        } else {
            shapeChange.append(.nan)
        }
        shapes.append(shape)
    }

    /// The spans of speech, `startTime` being the time of the first sample fed.
    func spans(startTime: Double) -> [SpeechSpan] {
        let n = loudness.count
        guard n > 0 else { return [] }
        let floor = loudness.sorted()[n / 10]
        let threshold = max(-55, floor + 9)
        let active = loudness.map { $0 > threshold }
        var voiced = (0..<n).map { active[$0] && periodicity[$0] >= 0.6 }
        for k in 1..<max(1, n - 1) where !voiced[k] && voiced[k - 1] && voiced[k + 1] { voiced[k] = true }
        // Pitch motion (cents) between consecutive voiced frames with a pitch.
        var motion = [Float](repeating: .nan, count: n)
        for k in 1..<max(1, n) where voiced[k] && voiced[k - 1] && pitch[k] > 0 && pitch[k - 1] > 0 {
            motion[k] = 1200 * abs(log2(pitch[k] / pitch[k - 1]))
        }
        let window = 100, step = 25
        var speechy = [Bool](repeating: false, count: n)
        var starts = Array(stride(from: 0, through: max(0, n - window), by: step))
        if let last = starts.last, last + window < n { starts.append(n - window) }
        for start in starts {
            let range = start..<min(n, start + window)
            let voicedShare = Double(range.filter { voiced[$0] }.count) / Double(window)
            let moves = range.map { motion[$0] }.filter { !$0.isNaN }.sorted()
            let changes = range.filter { voiced[$0] && $0 >= 2 && voiced[$0 - 2] }.map { shapeChange[$0] }.filter { !$0.isNaN }.sorted()
            guard voicedShare >= 0.2, moves.count > 10, changes.count > 10 else { continue }
            let medianMove = moves[moves.count / 2]
            let steady = Double(moves.filter { $0 < 3 }.count) / Double(moves.count)
            // A window whose pitch plainly says speech (a voice in two fifths of it or more,
            // gliding 4–30 cents a frame, seldom held) needs less of the formants' motion: music
            // under the voice keeps part of the spectrum steady.
            let plainlyVoiced = voicedShare >= 0.4 && medianMove <= 30 && steady <= 0.3
            guard medianMove >= 4, medianMove <= 60, steady <= 0.45, changes[changes.count / 2] >= (plainlyVoiced ? 1.0 : 1.3) else { continue }
            // The window's middle half (its first and last quarter too at the ends).
            let from = start == 0 ? 0 : start + step
            let to = range.upperBound >= n ? n : start + window - step
            for k in from..<max(from, to) { speechy[k] = true }
        }

        // Runs of voiced frames in speechy windows; those of a word's length or more grow.
        var cores = Self.runs(count: n) { voiced[$0] && speechy[$0] }
        // A word said apart from the rest (a first "Look," or a last "three" after a breath):
        // voiced frames of a word's length, their pitch gliding, within `longestExtension` of a
        // voice the windows heard. Too short to fill a fifth of a window with voice, the windows
        // miss it; a held note (no glide) or a hum with no speech near it stays out.
        let apart = Self.runs(count: n) { voiced[$0] && !speechy[$0] }.filter { run in
            guard run.count >= Self.shortestWord,
                cores.contains(where: { max($0.lowerBound - run.upperBound, run.lowerBound - $0.upperBound) <= Self.reachFrames })
            else { return false }
            let glides = run.dropFirst().map { motion[$0] }.filter { !$0.isNaN }.sorted()
            return glides.count >= Self.shortestWord - 1 && (2...80).contains(glides[glides.count / 2])
        }
        if !apart.isEmpty { cores = (cores + apart).sorted { $0.lowerBound < $1.lowerBound } }
        let words = cores.filter { $0.count >= Self.shortestWord }
        let mergeGap = Int(Self.shortestPause / Self.frameSeconds)
        // A word the windows missed at either end (a phrase's last word, said low or creaky):
        // loud, half-periodic frames whose pitch glides, going on from the span with no pause
        // between (a lone loud frame in a pause is noise, no sound to carry it).
        let word = { (k: Int) in
            k > 0 && active[k] && periodicity[k] >= 0.4 && periodicity[k - 1] >= 0.4 && pitch[k] > 0 && pitch[k - 1] > 0
                && (2...80).contains(1200 * abs(log2(pitch[k] / pitch[k - 1])))
        }
        let sound = { (k: Int) in active[k] && (k > 0 && active[k - 1] || k + 1 < n && active[k + 1]) }
        var runs: [Range<Int>] = []
        var nextWord = 0  // the first word that does not end before this run
        for core in cores {
            while nextWord < words.count && words[nextWord].upperBound <= core.lowerBound { nextWord += 1 }
            // A blip of voice (under `shortestWord`), such as a hum in traffic that a speechy
            // window covers, grows neither way: it counts only when it lies close to a span.
            let grows = core.count >= Self.shortestWord
            // The words next to this run bound its growth: it stops a pause short of them, and
            // they decide themselves whether they join it (over traffic, a hum in a pause once
            // carried the reach from one sentence into the next).
            // (A word's pause may reach past either end of the sound, so the reach ranges below
            // are clamped to it; the loudness slices further down hold, as `before <= start` and
            // `stop <= after`.)
            let before = nextWord > 0 ? words[nextWord - 1].upperBound : -mergeGap
            let following = nextWord < words.count && words[nextWord] == core ? nextWord + 1 : nextWord
            let after = following < words.count ? words[following].lowerBound : n + mergeGap
            let first =
                grows
                ? Self.reach(
                    from: core.lowerBound - 1, by: -1, within: min(n, max(0, before + mergeGap))..<n,
                    through: sound, to: word) : core.lowerBound
            let last =
                grows
                ? Self.reach(
                    from: core.upperBound, by: 1, within: 0..<max(0, min(n, after - mergeGap)),
                    through: sound, to: word) : core.upperBound - 1
            // Unvoiced sounds at the ends (s, t, f) and a sentence's fading last syllable: the
            // frames next to the voiced ones 4 dB above both the floor and the quietest frame
            // between them and the next words (over a steady background, the growth ends where
            // the voice does), up to 120 ms before and 250 ms after (`grown`).
            var from = min(core.lowerBound, first)
            let start = from
            let quietBefore = max(floor, loudness[max(0, before, start - 50)..<max(1, start)].min() ?? floor)
            if grows { from = Self.grown(from, by: -1, to: max(0, start - 12), loudness: loudness, quiet: quietBefore) }
            var to = max(core.upperBound, last + 1)
            let stop = to
            let quietAfter = max(floor, loudness[min(stop, n - 1)..<min(n, after, stop + 50)].min() ?? floor)
            if grows { to = Self.grown(to - 1, by: 1, to: min(n - 1, stop + 24), loudness: loudness, quiet: quietAfter) + 1 }
            if let last = runs.last, from - last.upperBound < mergeGap {
                runs[runs.count - 1] = last.lowerBound..<max(last.upperBound, to)
            } else {
                runs.append(from..<to)
            }
        }
        return runs.filter { $0.count >= 10 }.map {
            SpeechSpan(
                start: startTime + Double($0.lowerBound) * Self.frameSeconds,
                end: startTime + Double($0.upperBound) * Self.frameSeconds + 0.02,
                fall: fall(over: $0, voiced: voiced))
        }
    }

    /// The voice's fall at the end of `run` (see `SpeechSpan.fall`): the median pitch of its
    /// voiced frames over that of its last `finalFrames`, in semitones; nil with fewer than twice
    /// that many voiced frames.
    func fall(over run: Range<Int>, voiced: [Bool]) -> Double? {
        let pitches = run.filter { voiced[$0] && pitch[$0] > 0 }.map { Double(pitch[$0]) }
        guard pitches.count >= 2 * Self.finalFrames else { return nil }
        func median(_ values: some Collection<Double>) -> Double { values.sorted()[values.count / 2] }
        return 12 * log2(median(pitches) / median(pitches.suffix(Self.finalFrames)))
    }
}

extension SpeechDetector {
    /// The runs of frames `0..<count` for which `holds` is true.
    static func runs(count: Int, where holds: (Int) -> Bool) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var k = 0
        while k < count {
            guard holds(k) else { k += 1; continue }
            var end = k
            while end < count && holds(end) { end += 1 }
            result.append(k..<end)
            k = end
        }
        return result
    }

    /// How far a span whose outermost frame is `edge` grows (stepping by `step`, no farther than
    /// `limit`): over a frame next to it 4 dB above `quiet`, or across a stop's closure of up to
    /// `closure` frames (the silence before a final "t" or inside "st") to a burst `burst` dB above
    /// it; a louder background that rises and falls in a pause (traffic) is no burst. Answers the
    /// new outermost frame.
    static func grown(_ edge: Int, by step: Int, to limit: Int, loudness: [Float], quiet: Float) -> Int {
        var edge = edge, k = edge + step
        while step > 0 ? k <= limit : k >= limit, abs(k - edge) <= closure + 1 {
            if loudness[k] > quiet + (abs(k - edge) == 1 ? 4 : burst) { edge = k }
            k += step
        }
        return edge
    }

    /// The farthest frame from `origin` (stepping by `step`, at most `longestExtension`) that
    /// ends three `word` frames in a row, reached through `sound` with no gap of `shortestPause`
    /// or more; `origin - step` if none.
    static func reach(
        from origin: Int, by step: Int, within frames: Range<Int>,
        through sound: (Int) -> Bool, to word: (Int) -> Bool
    ) -> Int {
        let longest = reachFrames, gap = Int(shortestPause / frameSeconds)
        var reached = origin - step, heard = origin - step, k = origin, run = 0
        while frames.contains(k), abs(k - origin) < longest, abs(k - heard) <= gap {
            if sound(k) { heard = k }
            run = word(k) ? run + 1 : 0
            if run >= 3 { reached = k }
            k += step
        }
        return reached
    }
}

/// A second-order IIR section (RBJ's cookbook, Butterworth Q).
struct Biquad {
    var b0, b1, b2, a1, a2: Double
    var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

    static func highPass(_ hz: Double, sampleRate: Double = 16_000) -> Biquad {
        let w = 2 * Double.pi * hz / sampleRate, alpha = sin(w) / (2 * 0.5.squareRoot()), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: (1 + c) / 2 / a0, b1: -(1 + c) / a0, b2: (1 + c) / 2 / a0, a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    static func lowPass(_ hz: Double, sampleRate: Double = 16_000) -> Biquad {
        let w = 2 * Double.pi * hz / sampleRate, alpha = sin(w) / (2 * 0.5.squareRoot()), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: (1 - c) / 2 / a0, b1: (1 - c) / a0, b2: (1 - c) / 2 / a0, a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    mutating func process(_ x: Double) -> Double {
        let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        (x2, x1, y2, y1) = (x1, x, y1, y)
        return y
    }
}

/// The power spectrum of real input of a power-of-two size (iterative radix-2 FFT).
struct RealSpectrum {
    let size: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let reversed: [Int]

    init(size: Int) {
        precondition(size > 1 && size & (size - 1) == 0, "size must be a power of two")
        self.size = size
        cosines = (0..<size / 2).map { Float(cos(-2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<size / 2).map { Float(sin(-2 * Double.pi * Double($0) / Double(size))) }
        let bits = size.trailingZeroBitCount
        reversed = (0..<size).map { i in (0..<bits).reduce(0) { $0 | ((i >> $1) & 1) << (bits - 1 - $1) } }
    }

    /// |X(k)|² for k in 0...size/2.
    func power(of input: [Float]) -> [Float] {
        var re = reversed.map { input[$0] }
        var im = [Float](repeating: 0, count: size)
        var length = 2
        while length <= size {
            let half = length / 2, stride = size / length
            for start in Swift.stride(from: 0, to: size, by: length) {
                for j in 0..<half {
                    let wr = cosines[j * stride], wi = sines[j * stride]
                    let a = start + j, b = a + half
                    let tr = re[b] * wr - im[b] * wi, ti = re[b] * wi + im[b] * wr
                    re[b] = re[a] - tr; im[b] = im[a] - ti
                    re[a] += tr; im[a] += ti
                }
            }
            length *= 2
        }
        return (0...size / 2).map { re[$0] * re[$0] + im[$0] * im[$0] }
    }
}
