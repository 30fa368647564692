import Foundation

/// The beat of a piece of music: its tempo and the time of every beat, for cutting on it.
public struct BeatGrid: Sendable, Codable, Equatable {
    /// Beats a minute.
    public var tempo: Double
    /// The beats, in seconds from the start of the music.
    public var beats: [Double]
    /// The first beat of each bar of four.
    public var downbeats: [Double]
    /// How plainly the music repeats at that tempo (the onsets' autocorrelation there, 0…1).
    public var strength: Double

    public init(tempo: Double, beats: [Double], downbeats: [Double], strength: Double) {
        self.tempo = tempo
        self.beats = beats
        self.downbeats = downbeats
        self.strength = strength
    }
}

/// Finds the beat in a 16 kHz mono track, after Ellis (2007), "Beat tracking by dynamic
/// programming": an onset envelope (the rise of loudness in 24 bands, 8 ms apart), the tempo where
/// that envelope repeats best (weighted towards a listener's preferred 120 a minute), then the
/// beats as the path through the envelope's peaks whose steps stay closest to that tempo.
struct BeatTracker {
    static let sampleRate = 16_000
    /// The slowest and fastest tempos looked for.
    static let tempos = 50.0...220.0
    /// Weaker repetition than this is no beat (noise, speech, ambient sound).
    static let weakest = 0.2
    /// A beat goes on: two, three or four beats later the envelope still repeats at least this
    /// plainly. Speech's even syllables can repeat once as plainly as music, not again (the
    /// figures are in docs/engine.md).
    static let sustained = 0.18
    /// A rise of the bands (summed, weighed dB) under this is no onset: in their loudest hundredth
    /// of frames a steady tone or hum rises by 7–22, game soundtracks by 26–256 (30 and more
    /// where they have a beat), a kick, a click or a syllable by 60 and more.
    static let faintest: Float = 25

    private static let hop = 128
    private static let size = 512
    private static let bandCount = 24
    private static var frameSeconds: Double { Double(hop) / Double(sampleRate) }
    /// A frame's rise is heard three quarters into it: the window's taper hides the attack until
    /// then (measured on the kicks of `BeatTrackerTests`).
    private static var lead: Double { 0.75 * Double(size) / Double(sampleRate) }

    /// Per frame, the bands' loudness (dB) and the frame's (dBFS).
    private(set) var bands: [[Float]] = []
    private(set) var loudness: [Float] = []

    private var pending: [Float] = []
    private let spectrum = RealSpectrum(size: BeatTracker.size)
    private let bandBins: [Range<Int>]
    private let hann: [Float]

    init() {
        let binHz = Double(Self.sampleRate) / Double(Self.size)
        let edges = (0...Self.bandCount).map { 40 * pow(7_000.0 / 40, Double($0) / Double(Self.bandCount)) }
        // At least a bin a band (the lowest bands are narrower than a bin).
        var bins: [Range<Int>] = []
        var low = 1
        for band in 0..<Self.bandCount {
            let high = max(low + 1, Int((edges[band + 1] / binHz).rounded()))
            bins.append(low..<min(high, Self.size / 2 + 1))
            low = min(high, Self.size / 2)
        }
        bandBins = bins
        hann = (0..<Self.size).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(Self.size))) }
    }

    /// Adds samples (16 kHz mono) and measures every frame they complete.
    mutating func feed(_ samples: UnsafeBufferPointer<Float>) {
        pending.append(contentsOf: samples)
        var start = 0
        while start + Self.size <= pending.count {
            measure(pending[start..<(start + Self.size)])
            start += Self.hop
        }
        pending.removeFirst(start)
    }

    private mutating func measure(_ frame: ArraySlice<Float>) {
        var windowed = [Float](repeating: 0, count: Self.size)
        var energy: Float = 0
        for (i, sample) in frame.enumerated() {
            windowed[i] = sample * hann[i]
            energy += sample * sample
        }
        loudness.append(10 * log10(energy / Float(Self.size) + 1e-10))
        let power = spectrum.power(of: windowed)
        bands.append(bandBins.map { bins in 10 * log10(bins.reduce(Float(0)) { $0 + power[$1] } / Float(bins.count) + 1e-10) })
    }

    /// Per frame, the rise of the bands' loudness (dB) since the frame before, each band weighed
    /// by the square root of its share of the music's power: the beat is where the bulk of the
    /// sound starts (kick, bass, chords), not a hi-hat's hiss between (quiet bands rise by as
    /// many decibels from less). Bands 80 dB under the loudest rise from that floor.
    func onsets() -> [Float] {
        guard !bands.isEmpty else { return [] }
        var mean = [Double](repeating: 0, count: Self.bandCount)
        for frame in bands { for b in 0..<Self.bandCount { mean[b] += pow(10, Double(frame[b]) / 10) } }
        let loudest = mean.max() ?? 0
        let weights = mean.map { Float(loudest > 0 ? ($0 / loudest).squareRoot() : 0) }
        var onsets: [Float] = [0]
        for k in bands.indices.dropFirst() {
            let (now, before) = (bands[k], bands[k - 1])
            let top = max(now.max() ?? 0, before.max() ?? 0) - 80
            var rise: Float = 0
            for b in 0..<Self.bandCount { rise += weights[b] * max(0, max(now[b], top) - max(before[b], top)) }
            onsets.append(rise)
        }
        return onsets
    }

    /// The beat of what was fed, `startTime` being the time of its first sample; nil where nothing
    /// rises plainly (silence, a steady tone, hum), nothing repeats plainly enough (noise), the
    /// repetition does not go on (speech) or the music is shorter than four beats.
    func grid(startTime: Double = 0) -> BeatGrid? {
        let n = bands.count
        guard let peak = loudness.max(), peak > -60, n > 0 else { return nil }
        let rises = onsets()
        guard rises.sorted()[n * 99 / 100] >= Self.faintest else { return nil }
        let envelope = Self.normalised(rises)
        guard let (best, rival) = Self.tempo(of: envelope), best.strength >= Self.weakest, best.later >= Self.sustained,
            Double(n) >= 4 * best.period
        else { return nil }
        // Beats only where there is music: not in the silence before or after it. A beat inside
        // it stays, however quiet its frame (a lossy encoder may silence the moment before a bar).
        guard let first = loudness.firstIndex(where: { $0 > peak - 50 }), let last = loudness.lastIndex(where: { $0 > peak - 50 }) else { return nil }
        func track(_ tempo: Tempo) -> [Int] {
            Self.beatsBothWays(in: envelope, periods: Self.periods(of: envelope, near: tempo.period)).filter { (first...last).contains($0) }
        }
        // Where a rival period scores nearly as well, the path whose beats land on stronger onsets.
        var (period, strength, _) = best
        var frames = track(best)
        if let rival, Double(n) >= 4 * rival.period {
            let other = track(rival)
            if Self.onsetAtBeats(other, in: envelope) > Self.onsetAtBeats(frames, in: envelope) {
                (period, strength, frames) = (rival.period, rival.strength, other)
            }
        }
        guard frames.count >= 4 else { return nil }
        let time = { (frame: Int) in startTime + Double(frame) * Self.frameSeconds + Self.lead }
        return BeatGrid(
            tempo: 60 / (period * Self.frameSeconds), beats: frames.map(time),
            downbeats: Self.downbeats(of: frames, envelope: envelope, bands: bands).map { time(frames[$0]) },
            strength: strength)
    }

    /// The beats (indices) that start a bar of four. Each beat's accent is the onset at it (half
    /// weight) and how much new sound it brings (the rise of the bands' mean loudness from the
    /// beat before to the beat after it: chords change on the bar, held ones only fade). The bars
    /// are the most likely path through the places in the bar (Viterbi): one place on from each
    /// beat to the next, a downbeat scoring its accent, and a jump to another place (where the
    /// tracker missed or added a beat) costing four.
    static func downbeats(of frames: [Int], envelope: [Double], bands: [[Float]]) -> [Int] {
        guard frames.count >= 8 else { return Array(stride(from: 0, to: frames.count, by: 4)) }
        func z(_ values: [Double]) -> [Double] {
            let mean = values.reduce(0, +) / Double(values.count)
            let deviation = (values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count)).squareRoot()
            return values.map { deviation > 0 ? ($0 - mean) / deviation : 0 }
        }
        func meanBands(_ range: Range<Int>) -> [Double] {
            var sum = [Double](repeating: 0, count: bandCount)
            for k in range { for b in 0..<bandCount { sum[b] += Double(bands[k][b]) } }
            return sum.map { $0 / Double(max(1, range.count)) }
        }
        let strengths = frames.map { onset(at: $0, in: envelope) }
        let changes = frames.indices.map { k -> Double in
            guard k > 0, k + 1 < frames.count else { return 0 }
            let before = meanBands(frames[k - 1]..<frames[k]), after = meanBands(frames[k]..<frames[k + 1])
            return zip(before, after).reduce(0) { $0 + max(0, $1.1 - $1.0) } / Double(bandCount)
        }
        let accents = zip(z(strengths), z(changes)).map { 0.5 * $0 + $1 }
        let jump = 4.0
        var score = (0..<4).map { $0 == 0 ? accents[0] : 0 }
        var back: [[Int]] = [[0, 1, 2, 3]]
        for k in 1..<accents.count {
            var next = [Double](repeating: 0, count: 4), from = [Int](repeating: 0, count: 4)
            for place in 0..<4 {
                let steady = (place + 3) % 4
                var best = score[steady], origin = steady
                for other in 0..<4 where other != steady && score[other] - jump > best { best = score[other] - jump; origin = other }
                next[place] = best + (place == 0 ? accents[k] : 0)
                from[place] = origin
            }
            score = next
            back.append(from)
        }
        var place = (0..<4).max { score[$0] < score[$1] } ?? 0
        var downbeats: [Int] = []
        for k in stride(from: accents.count - 1, through: 0, by: -1) {
            if place == 0 { downbeats.append(k) }
            place = back[k][place]
        }
        return downbeats.reversed()
    }

    /// Strong onsets (the envelope three deviations up, no faint rise, the sound louder, a quarter
    /// second apart at least), where a track with no steady beat may be cut.
    func strongOnsets(startTime: Double = 0) -> [Double] {
        guard let peak = loudness.max(), peak > -60 else { return [] }
        let rises = onsets()
        let envelope = Self.normalised(rises)
        let reach = Int(0.125 / Self.frameSeconds)
        var found: [Int] = []
        // A hit also makes the sound louder (by 3 dB over the quietest of the 50 ms before): a
        // sweep's or a hum's bands wobble at a steady loudness.
        let louder = { (k: Int) in loudness[k] - (loudness[max(0, k - 6)..<max(1, k)].min() ?? loudness[k]) >= 3 }
        for k in envelope.indices where envelope[k] >= 3 && rises[k] >= Self.faintest && loudness[k] > peak - 50 && louder(k) {
            let around = envelope[max(0, k - reach)...min(envelope.count - 1, k + reach)]
            guard envelope[k] == around.max() else { continue }
            if let last = found.last, k - last < 2 * reach { continue }
            found.append(k)
        }
        return found.map { startTime + Double($0) * Self.frameSeconds + Self.lead }
    }

    /// The loudness (dBFS) of each second fed (the last one if at least half of it was).
    func loudnessPerSecond() -> [Double] {
        let perSecond = Int((1 / Self.frameSeconds).rounded())
        return stride(from: 0, to: loudness.count - perSecond / 2, by: perSecond).map { start in
            let second = loudness[start..<min(loudness.count, start + perSecond)]
            let energy = second.reduce(0.0) { $0 + pow(10, Double($1) / 10) } / Double(second.count)
            return 10 * log10(energy + 1e-10)
        }
    }

    /// The envelope less its mean over the last second (a slow swell is no onset), rectified and
    /// scaled to a standard deviation of one.
    static func normalised(_ onsets: [Float]) -> [Double] {
        let span = Int(1 / frameSeconds)
        var sum = 0.0
        var out = [Double](repeating: 0, count: onsets.count)
        for (k, value) in onsets.enumerated() {
            sum += Double(value)
            if k >= span { sum -= Double(onsets[k - span]) }
            out[k] = max(0, Double(value) - sum / Double(min(k + 1, span)))
        }
        let mean = out.reduce(0, +) / Double(max(1, out.count))
        let deviation = (out.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(max(1, out.count))).squareRoot()
        return deviation > 0 ? out.map { $0 / deviation } : out
    }

    /// A beat period (frames), the envelope's autocorrelation there, and the most of it two,
    /// three or four periods on.
    typealias Tempo = (period: Double, strength: Double, later: Double)

    /// The beat period where the envelope repeats best at it and its multiples up to four,
    /// weighted towards 120 a minute (a log-normal of an octave), and a rival: the best period
    /// that scores nearly as well (`rivalShare`) and is no metrical level of it (no multiple of
    /// half or a third of it, nor 4:3 or 3:4, which is two beats against one and a half). Music
    /// whose tempo changes by 5:4 repeats at two beats before the change, two and a half after
    /// it (its half-beat grid) as plainly as at either beat.
    static func tempo(of envelope: [Double]) -> (best: Tempo, rival: Tempo?)? {
        let mean = envelope.reduce(0, +) / Double(max(1, envelope.count))
        let centred = envelope.map { $0 - mean }
        let shortest = Int((60 / tempos.upperBound / frameSeconds).rounded(.down))
        let longest = Int((60 / tempos.lowerBound / frameSeconds).rounded(.up))
        guard centred.count > 4 * longest + 2 else { return nil }
        let zero = centred.reduce(0) { $0 + $1 * $1 }
        guard zero > 0 else { return nil }
        let correlation = (0...(4 * longest + 1)).map { lag in
            (0..<(centred.count - lag)).reduce(0.0) { $0 + centred[$1] * centred[$1 + lag] } / zero
        }
        let preferred = 60 / 120 / frameSeconds
        func weight(_ lag: Double) -> Double { exp(-0.5 * pow(log2(lag / preferred), 2)) }
        // A beat repeats at each of its multiples; a period of one and a half beats (on the
        // off-beat every other time) only at its even ones.
        func at(_ lag: Int) -> Double { max(correlation[lag - 1], correlation[lag], correlation[lag + 1]) }
        let scores = (shortest...longest).map { lag in
            weight(Double(lag)) * (correlation[lag] + (2...4).reduce(0.0) { $0 + at($1 * lag) / Double($1) })
        }
        guard let best = scores.indices.max(by: { scores[$0] < scores[$1] }) else { return nil }
        var lag = best + shortest
        // One and a half beats still wins now and then (fast music whose notes start on the
        // off-beat too); its half falls between beats, where two thirds of it is a beat.
        let twoThirds = Int((2 * Double(lag) / 3).rounded())
        if twoThirds >= shortest, at(twoThirds) > at(lag / 2) + 0.1, at(twoThirds) >= 0.8 * at(lag) { lag = twoThirds }
        func refined(_ lag: Int) -> Tempo {
            // The peak between frames, from the correlation's parabola through it.
            let (a, b, c) = (correlation[lag - 1], correlation[lag], correlation[lag + 1])
            let offset = b > a && b > c ? 0.5 * (a - c) / (a - 2 * b + c) : 0
            let period = Double(lag) + max(-0.5, min(0.5, offset))
            let later = (2...4).map { at(min(4 * longest, Int((Double($0) * period).rounded()))) }.max()!
            return (period, max(0, b), later)
        }
        let levels: [Double] = [1.0 / 4, 1.0 / 3, 1.0 / 2, 2.0 / 3, 3.0 / 4, 1, 4.0 / 3, 3.0 / 2, 2, 3, 4]
        let rival = scores.indices.filter { i in
            let ratio = Double(i + shortest) / Double(lag)
            return scores[i] >= rivalShare * scores[best] && !levels.contains { abs(ratio / $0 - 1) <= 0.06 }
        }.max { scores[$0] < scores[$1] }
        return (refined(lag), rival.map { refined($0 + shortest) })
    }

    /// How nearly a rival period must score as well as the best for both to be tracked.
    static let rivalShare = 0.9

    /// The onset a beat at `frame` has: the envelope's peak within two frames of it.
    static func onset(at frame: Int, in envelope: [Double]) -> Double {
        envelope[max(0, frame - 2)...min(envelope.count - 1, frame + 2)].max() ?? 0
    }

    /// How plainly a path's beats land on onsets: the mean of their onsets.
    static func onsetAtBeats(_ frames: [Int], in envelope: [Double]) -> Double {
        frames.isEmpty ? 0 : frames.reduce(0.0) { $0 + onset(at: $1, in: envelope) } / Double(frames.count)
    }

    /// The beat periods at each frame, for music whose tempo changes: over 8 s windows a second
    /// apart, the period within a third of `global` (so the metrical level stays the one chosen
    /// for the whole) where the window repeats best at it, its multiples and its half, if it
    /// repeats there far more plainly than at `global`; the median of three windows. A frame
    /// may step at the shortest or the longest period of its own window and the lasting ones
    /// within `changeReach` of it: an 8 s window hears a change of tempo up to 4 s before or
    /// after it happens.
    static func periods(of envelope: [Double], near global: Double) -> [ClosedRange<Double>] {
        let n = envelope.count
        let window = Int(8 / frameSeconds), hop = Int(1 / frameSeconds)
        let lags = Int((global / 1.35).rounded(.down))...Int((global * 1.35).rounded(.up))
        guard n > window + hop, lags.lowerBound >= 2 else { return [ClosedRange<Double>](repeating: global...global, count: n) }
        var local: [Double] = []
        for start in stride(from: 0, through: n - window, by: hop) {
            let part = envelope[start..<(start + window)]
            let mean = part.reduce(0, +) / Double(window)
            let centred = part.map { $0 - mean }
            let zero = centred.reduce(0) { $0 + $1 * $1 }
            guard zero > 0 else { local.append(local.last ?? global); continue }
            func correlation(_ lag: Int) -> Double {
                guard lag < window else { return 0 }
                var sum = 0.0
                for i in 0..<(window - lag) { sum += centred[i] * centred[i + lag] }
                return sum / zero
            }
            func near(_ lag: Int) -> Double { max(correlation(lag - 1), correlation(lag), correlation(lag + 1)) }
            var best = global, bestScore = -Double.infinity
            // Its multiples, and its half: three beats repeat at their multiples as well as two
            // do, but their half falls between beats.
            func score(_ lag: Int) -> Double { (1...4).reduce(0.0) { $0 + near($1 * lag) / Double($1) } + 0.5 * near(lag / 2) }
            for lag in lags where score(lag) > bestScore { bestScore = score(lag); best = Double(lag) }
            // The whole track's period unless the window repeats far more plainly at another:
            // a window is short, and a steady tempo must not wander.
            local.append(score(Int(global.rounded())) >= 0.6 * bestScore ? global : best)
        }
        let smoothed = local.indices.map { i -> Double in
            let around = local[max(0, i - 1)...min(local.count - 1, i + 1)].sorted()
            return around[around.count / 2]
        }
        // A tempo lasts: four windows in a row, or from the music's start or to its end (cut
        // short there). A window's mishearing (a bar of another rhythm) lasts two or three.
        var lasting = [Bool](repeating: false, count: smoothed.count)
        var start = 0
        for i in smoothed.indices where i + 1 == smoothed.count || smoothed[i + 1] != smoothed[i] {
            for j in start...i { lasting[j] = i - start >= 3 || start == 0 || i + 1 == smoothed.count }
            start = i + 1
        }
        let choices = smoothed.indices.map { i -> ClosedRange<Double> in
            let around = (max(0, i - changeReach)...min(smoothed.count - 1, i + changeReach)).filter { $0 == i || lasting[$0] }.map { smoothed[$0] }
            return around.min()!...around.max()!
        }
        return (0..<n).map { k in choices[min(choices.count - 1, max(0, (k - window / 2) / hop))] }
    }

    /// How many windows (a second apart) either side of a frame's own its steps may take their
    /// period from. Within four, a path slipped onto the off-beat and back at little cost.
    static let changeReach = 2

    /// The beats found forwards up to the middle, then whichever of the two paths (forwards, or
    /// backwards from the end) does better after it by the paths' own measure (`pathScore`): a
    /// path's last beats are chosen on the score so far alone (at the end of a song the off-beat's
    /// hi-hat sometimes wins and the last few beats follow it), and the backwards path's are its
    /// first, which it may reach off the beat at a song's end. The two meet at a beat they share
    /// after the middle.
    static func beatsBothWays(in envelope: [Double], periods: [ClosedRange<Double>]) -> [Int] {
        let n = envelope.count
        let forwards = beats(in: envelope, periods: periods)
        let backwards = Array(beats(in: envelope.reversed(), periods: periods.reversed()).map { n - 1 - $0 }.reversed())
        guard let join = forwards.firstIndex(where: { f in f >= n / 2 && backwards.contains { abs($0 - f) <= 2 } }),
            let from = backwards.firstIndex(where: { abs($0 - forwards[join]) <= 2 })
        else { return forwards }
        let ahead = Array(forwards[join...]), behind = [forwards[join]] + backwards[(from + 1)...]
        let tail = pathScore(behind, in: envelope, periods: periods) > pathScore(ahead, in: envelope, periods: periods) ? behind : ahead
        return Array(forwards[..<join]) + tail
    }

    /// How far each step may stray from the period: a step of half or twice it costs as much as
    /// thirty beats' worth of onset.
    static let tightness = 300.0

    /// What `beats` maximises, over one path: the onset at its beats less the cost of its steps.
    static func pathScore(_ frames: [Int], in envelope: [Double], periods: [ClosedRange<Double>]) -> Double {
        let onset = frames.reduce(0.0) { $0 + envelope[$1] }
        let steps = zip(frames, frames.dropFirst()).reduce(0.0) { $0 + stepCost(from: $1.0, to: $1.1, period: periods[$1.1]) }
        return onset - steps
    }

    /// What a step from beat `from` to beat `to` costs where the period is either end of `period`
    /// (frames): against the nearer end in log terms, the shorter one below their geometric mean.
    /// One logarithm a step: this runs for every frame and every step the frame may end.
    @inline(__always)
    static func stepCost(from: Int, to: Int, period: ClosedRange<Double>) -> Double {
        let step = Double(to - from)
        let end = step * step <= period.lowerBound * period.upperBound ? period.lowerBound : period.upperBound
        let ratio = log(step / end)
        return tightness * ratio * ratio
    }

    /// The frames of the beats: the path through the envelope that collects the most onset while
    /// each step stays near the period there (`tightness`).
    static func beats(in envelope: [Double], periods: [ClosedRange<Double>]) -> [Int] {
        let n = envelope.count
        var score = envelope
        var back = [Int](repeating: -1, count: n)
        for t in 0..<n {
            let period = periods[t]
            let nearest = max(1, Int((period.lowerBound / 2).rounded())), farthest = Int((period.upperBound * 2).rounded())
            var best = -Double.infinity, from = -1
            for previous in max(0, t - farthest)...max(0, t - nearest) where previous < t {
                let value = score[previous] - stepCost(from: previous, to: t, period: period)
                if value > best { best = value; from = previous }
            }
            if from >= 0 { score[t] += best; back[t] = from }
        }
        // The last beat: the best-scoring frame of the last period.
        let tail = max(0, n - Int((periods.last?.upperBound ?? 1).rounded()))..<n
        guard var t = tail.max(by: { score[$0] < score[$1] }) else { return [] }
        var frames = [t]
        while back[t] >= 0 { t = back[t]; frames.append(t) }
        return frames.reversed()
    }
}
