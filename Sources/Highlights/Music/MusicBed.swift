import Foundation
import Media
import MomentsModel

/// A soundtrack for a highlight: the track, what its analysis found, and how it sits with the
/// source's own sound.
public struct MusicSettings: Sendable, Codable, Equatable {
    /// The loudness every highlight with music is made to (EBU R128, integrated): −16 LUFS, what
    /// phones' players and the short-video apps aim at.
    public static let targetLoudness = -16.0
    /// How far under the source's sound the music sits when nothing else is said, in dB.
    public static let defaultVolume = MusicChoice.defaultVolume
    /// The balance a client may ask for, in dB of the music against the source's sound.
    public static let volumes = MusicChoice.volumes
    /// How far the music goes down wherever someone speaks, in dB.
    public static let duckDepth = 12.0

    public var path: String
    /// What `MusicAnalyzer.analyse` found; nil: the engine analyses the track first (one the app
    /// uploaded with the video, analysed in the engine's process).
    public var analysis: MusicAnalysis?
    /// The music's loudness against the source's sound, in dB (`volumes`): −6 puts it 6 dB under.
    public var volume: Double
    /// False: the music alone, the source's sound left out.
    public var keepSourceAudio: Bool
    /// What the report calls the track (its title, or its file's name).
    public var title: String?

    enum CodingKeys: String, CodingKey {
        case path, analysis, volume, title
        case keepSourceAudio = "keep_source_audio"
    }

    public init(
        path: String, analysis: MusicAnalysis?, volume: Double = MusicSettings.defaultVolume, keepSourceAudio: Bool = true,
        title: String? = nil
    ) {
        self.path = path
        self.analysis = analysis
        self.volume = volume
        self.keepSourceAudio = keepSourceAudio
        self.title = title
    }
}

/// Which part of the track plays under a highlight, and where its beats fall on the highlight's
/// clock. The music starts on a downbeat; a track shorter than the highlight repeats from that
/// downbeat after whole bars.
struct MusicPlan: Sendable, Equatable {
    enum Mode: String, Sendable, Codable {
        /// Cuts on the beat.
        case beat
        /// No steady beat: cuts on the track's strong onsets.
        case onsets
        /// Neither: the cuts stay where the selection put them.
        case free
    }

    /// Track seconds played at the highlight's start.
    var start: Double
    /// Track seconds after which it plays again from `start` (nil: it lasts the highlight).
    var loopEnd: Double?
    var mode: Mode
    /// Where a cut may fall, in highlight seconds: the beats (or onsets), ascending.
    var beats: [Double]
    /// The first beat of each bar, in highlight seconds.
    var downbeats: [Double]
    /// Seconds between beats (nil without a beat).
    var beatPeriod: Double?

    /// The plan for a highlight of up to `length` seconds.
    init(_ music: MusicAnalysis, length: Double) {
        let usable = music.tempo != nil && music.beats.count >= 8 && !music.downbeats.isEmpty
        let mode: Mode = usable ? .beat : (music.onsets.count >= 2 ? .onsets : .free)
        // Where the music may start: a downbeat that begins two regular bars (a tracker's first
        // beats, before the music settles, may be off), or an onset.
        let bar = 4 * 60 / (music.tempo ?? 120)
        let regular = music.downbeats.indices.filter { i in
            i + 2 < music.downbeats.count
                && (1...2).allSatisfy { k in
                    abs(music.downbeats[i + k] - music.downbeats[i + k - 1] - bar) <= 0.1 * bar
                }
        }.map { music.downbeats[$0] }
        let points = mode == .beat ? (regular.isEmpty ? music.downbeats : regular) : (mode == .onsets ? music.onsets : [0])
        // Start on the chorus (the first loud section) when the rest of the track from there
        // lasts the highlight; else as early as it does; else at the first downbeat, repeated.
        let fits = points.filter { $0 + length <= music.duration }
        let chorus = music.loudSections.first.flatMap { section in fits.first { $0 >= section.start - 0.05 } }
        let start = chorus ?? fits.first ?? points.first ?? 0
        let loopEnd: Double?
        if start + length <= music.duration {
            loopEnd = nil
        } else if mode == .beat, let last = music.downbeats.last(where: { $0 > start + 4 }) {
            loopEnd = last
        } else {
            loopEnd = music.duration
        }
        let span = (loopEnd ?? music.duration) - start
        func within(_ times: [Double], shift: Double) -> [Double] {
            times.filter { $0 >= start - 1e-6 && $0 < start + span - 1e-6 }.map { $0 - start + shift }
        }
        var beats: [Double] = [], downbeats: [Double] = []
        var shift = 0.0
        while shift < length + 4, span > 0 {
            beats += within(mode == .beat ? music.beats : music.onsets, shift: shift)
            if mode == .beat { downbeats += within(music.downbeats, shift: shift) }
            if loopEnd == nil { break }
            shift += span
        }
        self.mode = mode
        self.start = start
        self.loopEnd = loopEnd
        self.beats = beats
        self.downbeats = downbeats
        beatPeriod = music.tempo.map { 60 / $0 }
    }

    /// The track's time at highlight second `t`.
    func trackTime(_ t: Double) -> Double {
        guard let loopEnd, loopEnd > start else { return start + t }
        return start + t.truncatingRemainder(dividingBy: loopEnd - start)
    }
}

/// The track decoded for one highlight: 48 kHz stereo from the plan's start, as long as the
/// highlight, repeated where the plan loops.
struct MusicBed {
    var left: [Float]
    var right: [Float]
}

extension MusicBed {
    init(settings: MusicSettings, plan: MusicPlan, seconds: Double) throws(MomentsError) {
        let rate = Double(Loudness.sampleRate)
        let (input, stream) = try MusicAnalyzer.open(settings.path)
        let from = Int((plan.start * rate).rounded()), to = Int(((plan.loopEnd ?? (plan.start + seconds)) * rate).rounded())
        var left: [Float] = [], right: [Float] = []
        left.reserveCapacity(max(0, to - from))
        right.reserveCapacity(max(0, to - from))
        var position = 0
        try MusicAnalyzer.decode(input, stream, sampleRate: Loudness.sampleRate, channels: 2, upTo: to) { planes, count in
            let skip = max(0, from - position)
            if skip < count {
                left.append(contentsOf: UnsafeBufferPointer(start: planes[0] + skip, count: count - skip))
                right.append(contentsOf: UnsafeBufferPointer(start: planes[1] + skip, count: count - skip))
            }
            position += count
        }
        let wanted = Int((seconds * rate).rounded(.up))
        if left.isEmpty { throw MomentsError(.corruptMedia, "No sound could be decoded from the music file. Export it again and retry.") }
        // Repeat the looped part (or, past a track's end, pad with silence) up to the highlight's length.
        let once = left.count
        while left.count < wanted {
            let n = min(once, wanted - left.count)
            if plan.loopEnd == nil {
                left += [Float](repeating: 0, count: wanted - left.count)
                right += [Float](repeating: 0, count: wanted - right.count)
            } else {
                left += left[0..<n]
                right += right[0..<n]
            }
        }
        self.left = Array(left.prefix(wanted))
        self.right = Array(right.prefix(wanted))
    }
}

/// How the music goes under the highlight's sound: at the source's loudness plus the balance,
/// down by `duckDepth` wherever someone speaks (down 150 ms before the speech starts, held 250 ms
/// past its end, ramps of 150 ms), faded out over the last second; the mix is then made
/// `targetLoudness` (EBU R128) and kept under −1 dBFS by the limiter.
struct MusicMix {
    var settings: MusicSettings
    var bed: MusicBed
    /// Where someone speaks, in highlight seconds.
    var speech: [SpeechSpan]

    /// What mixing did, for the report.
    struct Outcome: Sendable {
        var loudness: Double?
        var musicGain: Double
        var sourceLoudness: Double?
    }

    /// Mixes the music into `left`/`right` (the source's sound as the highlight has it) in place.
    func apply(_ left: inout [Float], _ right: inout [Float]) -> Outcome {
        let count = left.count
        let source = settings.keepSourceAudio ? Loudness.integrated(left, right) : nil
        if !settings.keepSourceAudio {
            left = [Float](repeating: 0, count: count)
            right = [Float](repeating: 0, count: count)
        }
        let music = Loudness.integrated(Array(bed.left.prefix(count)), Array(bed.right.prefix(count)))
        // The music at the source's loudness plus the balance; alone (or over silence), at the target.
        let wanted = (source ?? MusicSettings.targetLoudness) + (source == nil ? 0 : settings.volume)
        let musicGain = music.map { wanted - $0 } ?? 0
        let envelope = duckEnvelope(count: count)
        let base = Loudness.gain(decibels: musicGain)
        let fadeStart = max(0, count - Loudness.sampleRate)
        let fadeIn = Loudness.sampleRate / 100
        for n in 0..<min(count, bed.left.count) {
            var gain = base * envelope[n]
            if n >= fadeStart { gain *= Float(count - n) / Float(count - fadeStart) }
            if n < fadeIn { gain *= Float(n) / Float(fadeIn) }
            left[n] += bed.left[n] * gain
            right[n] += bed.right[n] * gain
        }
        // To the target loudness, under the ceiling; the limiter takes a little off, so measure again.
        var measured = Loudness.integrated(left, right)
        for _ in 0..<2 {
            guard let now = measured, abs(now - MusicSettings.targetLoudness) > 0.2 else { break }
            let g = Loudness.gain(decibels: MusicSettings.targetLoudness - now)
            for n in 0..<count { left[n] *= g; right[n] *= g }
            Limiter.apply(&left, &right)
            measured = Loudness.integrated(left, right)
        }
        return Outcome(loudness: measured, musicGain: musicGain, sourceLoudness: source)
    }

    /// The music's gain at each sample: 1, or `duckDepth` down around speech.
    func duckEnvelope(count: Int) -> [Float] {
        let rate = Double(Loudness.sampleRate)
        let ramp = Int(0.15 * rate)
        var target = [Float](repeating: 1, count: count)
        let low = Loudness.gain(decibels: -MusicSettings.duckDepth)
        for span in speech {
            let from = max(0, Int((span.start * rate).rounded()) - ramp), to = min(count, Int(((span.end + 0.25) * rate).rounded()))
            if from < to { for n in from..<to { target[n] = low } }
        }
        // Straight ramps: down over the 150 ms before each stretch, up over the 150 ms after it.
        var envelope = target
        let step = (1 - low) / Float(ramp)
        for n in stride(from: count - 2, through: 0, by: -1) { envelope[n] = min(envelope[n], envelope[n + 1] + step) }
        for n in 1..<max(1, count) { envelope[n] = min(envelope[n], envelope[n - 1] + step) }
        return envelope
    }
}
