import Foundation
import Media
import MomentsSupport

/// The audio half of the analysis pass: decodes the soundtrack to 16 kHz mono and keeps one
/// loudness value per 50 ms window and the speech detector's four numbers per 10 ms (a few
/// kilobytes per minute).
final class AudioScanner {
    static let sampleRate = 16_000
    static let window = 0.05
    private static let windowSamples = Int(Double(sampleRate) * window)

    let stream: MediaStream
    private let decoder: Decoder
    private let resampler = Resampler(sampleRate: AudioScanner.sampleRate, channels: 1, format: .float)
    private let frame = Frame()
    private var accumulator = 0.0
    private var accumulated = 0
    private var firstTime: Double?
    /// Mean square per window, starting at `startTime`.
    private(set) var energies: [Float] = []
    private(set) var startTime = 0.0
    /// Where someone speaks (`SpeechDetector`), fed the same samples.
    private(set) var speech = SpeechDetector()

    init(stream: MediaStream) throws {
        self.stream = stream
        decoder = try Decoder(stream: stream, options: .init(threads: 1))
    }

    func feed(_ packet: Packet?) throws {
        try decoder.decode(packet, into: frame) { frame in
            if firstTime == nil {
                firstTime = frame.timestamp.map(stream.seconds) ?? 0
                startTime = max(0, firstTime!)
            }
            let converted = try resampler.convert(frame)
            let samples = UnsafeRawPointer(converted.plane(0).0).assumingMemoryBound(to: Float.self)
            speech.feed(UnsafeBufferPointer(start: samples, count: converted.sampleCount))
            for i in 0..<converted.sampleCount {
                let s = Double(samples[i])
                accumulator += s * s
                accumulated += 1
                if accumulated == Self.windowSamples {
                    energies.append(Float(accumulator / Double(accumulated)))
                    accumulator = 0
                    accumulated = 0
                }
            }
        }
    }

    func finish() throws {
        try feed(nil)
        if accumulated > Self.windowSamples / 4 { energies.append(Float(accumulator / Double(accumulated))) }
    }
}

/// Loudness features of a soundtrack, per second of video.
struct AudioFeatures: Sendable {
    /// Mean loudness of each second, dBFS.
    var loudness: [Double]
    /// Loudness relative to this video's own baseline (robust z-score: median and MAD).
    var excitement: [Double]
    /// Sudden rises in loudness (claps, hits, shouts) in each second.
    var onsets: [Int]
    var baseline: Double

    static let silence = -90.0

    init(energies: [Float], startTime: Double, seconds: Int) {
        let perSecond = Int((1 / AudioScanner.window).rounded())
        func decibels(_ energy: Double) -> Double { energy > 1e-9 ? 10 * log10(energy) : Self.silence }
        var loudness = [Double](repeating: Self.silence, count: seconds)
        var onsets = [Int](repeating: 0, count: seconds)
        let offset = Int(saturating: (startTime / AudioScanner.window).rounded())
        for second in 0..<seconds {
            let from = (second * perSecond).subtractingReportingOverflow(offset).partialValue,
                to = from.addingReportingOverflow(perSecond).partialValue
            let slice = energies[max(0, min(energies.count, from))..<max(0, min(energies.count, to))]
            guard !slice.isEmpty else { continue }
            loudness[second] = decibels(slice.reduce(0) { $0 + Double($1) } / Double(slice.count))
        }
        // An onset: a window at least 8 dB above the mean of the 4 before it, and above −40 dBFS.
        for i in 4..<max(4, energies.count) {
            let before = energies[(i - 4)..<i].reduce(0) { $0 + Double($1) } / 4
            let now = Double(energies[i])
            if decibels(now) > -40 && decibels(now) - decibels(before) >= 8 {
                let second = Int(saturating: (Double(i) + Double(offset)) * AudioScanner.window)
                if second >= 0 && second < seconds { onsets[second] += 1 }
            }
        }
        let audible = loudness.filter { $0 > Self.silence }.sorted()
        let median = audible.isEmpty ? Self.silence : audible[audible.count / 2]
        let deviations = audible.map { abs($0 - median) }.sorted()
        let mad = max(1.5, deviations.isEmpty ? 1.5 : deviations[deviations.count / 2] * 1.4826)
        self.loudness = loudness
        self.onsets = onsets
        self.baseline = median
        self.excitement = loudness.map { $0 <= Self.silence ? 0 : ($0 - median) / mad }
    }
}
