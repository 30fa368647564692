import Foundation
import Media
import MomentsModel

/// What a music track offers a highlight: its beat (where cuts may fall), its bars, its strong
/// onsets where it has no steady beat, and its loud sections.
public struct MusicAnalysis: Sendable, Codable, Equatable {
    /// Seconds of sound.
    public var duration: Double
    /// Beats a minute; nil where no steady beat was found (then cut on `onsets`).
    public var tempo: Double?
    /// How plainly the music repeats at its tempo (0…1; under `BeatTracker.weakest` is no beat).
    public var beatStrength: Double?
    /// Every beat, in seconds from the start.
    public var beats: [Double]
    /// The first beat of each bar of four.
    public var downbeats: [Double]
    /// Strong onsets: where a track with no steady beat may be cut.
    public var onsets: [Double]
    /// The loudness of each second (dBFS).
    public var loudness: [Double]
    /// Stretches of 4 s or more at least 2 dB louder than the track's median (a chorus, a drop).
    public var loudSections: [MusicSection]

    enum CodingKeys: String, CodingKey {
        case duration, tempo, beats, downbeats, onsets, loudness
        case beatStrength = "beat_strength", loudSections = "loud_sections"
    }
}

public struct MusicSection: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
}

/// Opens a music track, checks it and analyses it: every way it can be unusable ends in a
/// `MomentsError` whose sentence says what to do.
public enum MusicAnalyzer {
    /// The demuxers a track may be read with: those of video uploads (an M4A is MP4) and the
    /// audio formats people keep music in.
    public static let demuxers = InputFile.uploadDemuxers + ["mp3", "ogg", "flac", "wav", "aac", "aiff", "w64"]
    /// How long a track may be.
    public static let durations = 10.0...600.0

    static let notMusicSentence = "This file is not a music track we can read. Choose an MP3, M4A (AAC), WAV, FLAC or Ogg file."

    public static func analyse(path: String) throws(MomentsError) -> MusicAnalysis {
        let (input, stream) = try open(path)
        var tracker = BeatTracker()
        let heard = try decode(
            input, stream, sampleRate: BeatTracker.sampleRate, channels: 1,
            upTo: Int((durations.upperBound + 2) * Double(BeatTracker.sampleRate))
        ) { planes, count in
            tracker.feed(UnsafeBufferPointer(start: planes[0], count: count))
        }
        let duration = Double(heard) / Double(BeatTracker.sampleRate)
        if heard == 0 { throw MomentsError(.corruptMedia, "No sound could be decoded from the music file. Export it again and retry.") }
        try checkDuration(duration)

        // Times count from the first sample heard, as the track will be played under a
        // highlight (an MP3 encoder's delay, skipped by the decoder, is not part of it).
        let grid = tracker.grid()
        let loudness = tracker.loudnessPerSecond()
        return MusicAnalysis(
            duration: duration, tempo: grid?.tempo, beatStrength: grid?.strength,
            beats: grid?.beats ?? [], downbeats: grid?.downbeats ?? [],
            onsets: tracker.strongOnsets(), loudness: loudness,
            loudSections: loudSections(loudness))
    }

    /// Checks a file is a track we can use, from its container alone (no decoding): sound, no
    /// picture, 10 s to 10 min as it says. The analysis (`analyse`) checks again on the decoded sound.
    public static func probe(path: String) throws(MomentsError) {
        _ = try open(path)
    }

    /// Opens a track and checks it is one: a readable file of sound (no video), 10 s to 10 min long
    /// as far as the container says. Returns it with its sound stream, every other stream skipped.
    static func open(_ path: String) throws(MomentsError) -> (InputFile, MediaStream) {
        FFmpegLog.quiet()
        let name = URL(fileURLWithPath: path).lastPathComponent
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw MomentsError(.ioError, "The file \(name) could not be read: it does not exist or is not accessible.")
        }
        if (attributes[.type] as? FileAttributeType) == .typeDirectory {
            throw MomentsError(.ioError, "\(name) is a folder, not a music file.")
        }
        if ((attributes[.size] as? NSNumber)?.int64Value ?? 0) == 0 {
            throw MomentsError(.notAudio, "The music file is empty (0 bytes). Choose the track again.")
        }
        let input: InputFile
        do {
            input = try InputFile(path: path, demuxers: demuxers)
        } catch {
            if error.code == -ENOENT || error.code == -EACCES || error.code == -EIO {
                throw MomentsError(.ioError, "The music file could not be read (\(error.reason)).")
            }
            throw MomentsError(.notAudio, notMusicSentence)
        }
        if input.streams.contains(where: { $0.mediaType == .video && !$0.isAttachedPicture }) {
            throw MomentsError(.notAudio, "This file is a video. Choose a music track (MP3, M4A, WAV, FLAC or Ogg).")
        }
        guard let stream = input.bestStream(.audio) else {
            throw MomentsError(.notAudio, "This file has no sound in it. Choose a music track (MP3, M4A, WAV, FLAC or Ogg).")
        }
        guard stream.hasDecoder else {
            throw MomentsError(
                .unsupportedCodec, "This track is encoded as \(stream.codecName), which Moments cannot decode. Export it as MP3, AAC or WAV.")
        }
        // Random bytes now and then pass for raw MP3 at FFmpeg's weakest score, with no length.
        let stated = input.duration ?? stream.duration
        if input.probeScore <= InputFile.weakProbeScore && stated == nil { throw MomentsError(.notAudio, notMusicSentence) }
        if let stated { try checkDuration(stated) }

        input.discardAll(except: [stream.index])
        return (input, stream)
    }

    /// Decodes `stream` from its first sample, converted to `sampleRate` and `channels` of planar
    /// floats, handing `body` each run of samples (one pointer a channel); stops after `upTo`
    /// samples (a stated length can lie). Returns how many samples it handed on.
    @discardableResult
    static func decode(
        _ input: InputFile, _ stream: MediaStream, sampleRate: Int, channels: Int, upTo limit: Int,
        _ body: ([UnsafePointer<Float>], Int) throws -> Void
    ) throws(MomentsError) -> Int {
        var heard = 0
        do {
            let decoder = try Decoder(stream: stream, options: .init(threads: 1))
            let resampler = Resampler(sampleRate: sampleRate, channels: channels, format: channels == 1 ? .float : .floatPlanar)
            let packet = Packet(), frame = Frame()
            var more = true
            while more && heard < limit {
                more = try input.read(into: packet)
                if more && packet.streamIndex != stream.index { continue }
                try decoder.decode(more ? packet : nil, into: frame) { frame in
                    guard heard < limit else { return }
                    let converted = try resampler.convert(frame)
                    let count = min(converted.sampleCount, limit - heard)
                    guard count > 0 else { return }
                    let planes = (0..<channels).map { UnsafePointer(UnsafeRawPointer(converted.plane($0).0).assumingMemoryBound(to: Float.self)) }
                    try body(planes, count)
                    heard += count
                }
            }
        } catch let error as MomentsError {
            throw error
        } catch {
            throw MomentsError(.corruptMedia, "The music file is damaged or incomplete: \(error). Export it again and retry.")
        }
        return heard
    }

    static func checkDuration(_ seconds: Double) throws(MomentsError) {
        if seconds < durations.lowerBound {
            throw MomentsError(
                .tooShort, String(format: "The track is %.1f s long; music for a highlight needs at least %.0f s.", seconds, durations.lowerBound))
        }
        if seconds > durations.upperBound + 1 {
            throw MomentsError(
                .tooLong,
                String(
                    format: "The track is %.0f s long; Moments accepts music up to %.0f minutes. Trim it and try again.",
                    seconds, durations.upperBound / 60))
        }
    }

    /// Runs of 4 s or more whose loudness (over 3 s) is 2 dB or more above the median second's.
    static func loudSections(_ loudness: [Double]) -> [MusicSection] {
        guard loudness.count >= 4 else { return [] }
        let median = loudness.sorted()[loudness.count / 2]
        let smoothed = loudness.indices.map { i in
            let around = loudness[max(0, i - 1)...min(loudness.count - 1, i + 1)]
            return around.reduce(0, +) / Double(around.count)
        }
        var sections: [MusicSection] = []
        var start: Int?
        for i in 0...smoothed.count {
            let loud = i < smoothed.count && smoothed[i] >= median + 2
            if loud, start == nil { start = i }
            if !loud, let from = start {
                if i - from >= 4 { sections.append(MusicSection(start: Double(from), end: Double(i))) }
                start = nil
            }
        }
        return sections
    }
}
