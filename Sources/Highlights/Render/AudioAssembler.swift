import Media
import MomentsSupport

/// Places decoded audio on the output timeline, sample-exact, with fades at every joint, and feeds
/// the AAC encoder whole frames.
final class AudioAssembler {
    private let encoder: Encoder
    private let write: (Packet) throws -> Void
    private var left: [Float] = []
    private var right: [Float] = []
    private var encoded: Int64 = 0
    private var segmentLength = 0
    private var segmentWritten = 0

    /// The music to mix under the sound: the whole highlight's sound is then kept until `finish`,
    /// mixed, brought to the target loudness and only then encoded.
    private let music: MusicMix?
    /// What mixing the music did (after `finish`).
    private(set) var mixed: MusicMix.Outcome?

    init(encoder: Encoder, music: MusicMix? = nil, write: @escaping (Packet) throws -> Void) {
        self.encoder = encoder
        self.music = music
        self.write = write
    }

    func beginSegment(samples: Int) {
        segmentLength = samples
        segmentWritten = 0
    }

    /// Adds planar stereo (or mono) float samples that start `offset` samples into the segment.
    func add(_ frame: Frame, at offset: Int) throws {
        let count = frame.sampleCount
        guard count > 0 else { return }
        let l = UnsafeRawPointer(frame.plane(0).0).assumingMemoryBound(to: Float.self)
        let r = frame.channelCount > 1 ? UnsafeRawPointer(frame.plane(1).0).assumingMemoryBound(to: Float.self) : l
        if offset > segmentWritten { appendSilence(min(offset, segmentLength) - segmentWritten) }
        let skip = max(0, segmentWritten - offset)
        var i = skip
        while i < count && segmentWritten < segmentLength {
            append(l[i], r[i])
            i += 1
        }
        try flush(final: false)
    }

    private func appendSilence(_ n: Int) {
        for _ in 0..<max(0, n) { append(0, 0) }
    }

    private func append(_ l: Float, _ r: Float) {
        let position = segmentWritten
        let fadeIn = min(1, Float(position) / Float(Renderer.fadeSamples))
        let fadeOut = min(1, Float(segmentLength - 1 - position) / Float(Renderer.fadeSamples))
        let gain = max(0, min(fadeIn, fadeOut))
        left.append(l * gain)
        right.append(r * gain)
        segmentWritten += 1
    }

    func endSegment() throws {
        appendSilence(segmentLength - segmentWritten)
        try flush(final: false)
    }

    func finish() throws {
        if let music { mixed = music.apply(&left, &right) }
        try flush(final: true)
        try encoder.encode(nil, write)
    }

    private func flush(final: Bool) throws {
        if music != nil && !final { return }
        let size = max(1, encoder.frameSize)
        var done = 0
        while left.count - done >= size || (final && done < left.count) {
            let n = min(size, left.count - done)
            let frame = try Frame.audio(samples: n, sampleRate: Renderer.sampleRate, channels: 2, format: .floatPlanar)
            let l = UnsafeMutableRawPointer(frame.plane(0).0).assumingMemoryBound(to: Float.self)
            let r = UnsafeMutableRawPointer(frame.plane(1).0).assumingMemoryBound(to: Float.self)
            for i in 0..<n { l[i] = left[done + i]; r[i] = right[done + i] }
            done += n
            frame.pts = encoded
            encoded += Int64(n)
            try encoder.encode(frame, write)
        }
        left.removeFirst(done)
        right.removeFirst(done)
    }
}

/// Cuts one segment's sound out of decoded audio frames: each frame resampled to 48 kHz stereo and
/// placed by its own timestamp, sample-exact on the segment's span of the output. Both renderers
/// use it, so sound stays on the pictures' clock the same way whether they are copied or encoded.
final class SegmentSound {
    /// Samples the segment's sound is long: its share of the output, rounded on the output's clock
    /// so that the segments' lengths add up to the whole.
    let samples: Int
    private(set) var isDone: Bool
    private let stream: MediaStream?
    private let start: Double
    private let origin: Double
    private let resampler = Resampler(sampleRate: Renderer.sampleRate, channels: 2, format: .floatPlanar)

    /// The segment shows source seconds `start` (from `origin`) onwards at output seconds
    /// `outputStart..<outputEnd`; `stream` is nil for a source without sound.
    init(stream: MediaStream?, origin: Double, start: Double, outputStart: Double, outputEnd: Double) {
        let rate = Double(Renderer.sampleRate)
        samples = Int(saturating: (outputEnd * rate).rounded()) - Int(saturating: (outputStart * rate).rounded())
        isDone = stream == nil
        self.stream = stream
        self.start = start
        self.origin = origin
    }

    /// The part of `frame` this segment plays, resampled, and where in the segment it starts
    /// (negative: its first samples come before the segment and are dropped); nil once past the end.
    func take(_ frame: Frame) throws -> (samples: Frame, offset: Int)? {
        guard !isDone, let stream, let ticks = frame.timestamp else { return nil }
        let offset = Int(saturating: ((stream.seconds(ticks) - origin - start) * Double(Renderer.sampleRate)).rounded())
        if offset >= samples { isDone = true; return nil }
        let converted = try resampler.convert(frame)
        if offset + converted.sampleCount >= samples { isDone = true }
        return (converted, offset)
    }
}
