import Foundation
import Media
import MomentsModel
import MomentsSupport

/// Renders the chosen segments into one MP4: H.264 (yuv420p) and AAC-LC 48 kHz stereo, `moov` first.
///
/// Only the chosen ranges are decoded (seek to the keyframe before each). Video frames keep their
/// source timing relative to the segment start; audio is placed by the same clock, sample-exact, so
/// the two stay in sync across every joint. Each joint gets a short audio fade. A source without
/// sound gets a silent AAC track, so every highlight plays the same way.
final class Renderer {
    static let sampleRate = 48_000
    static let fadeSamples = 480  // 10 ms
    static let videoTimeBase = Rational(1, 90_000)

    struct Result {
        var duration: Double
        var width: Int
        var height: Int
        var silentAudio: Bool
        /// Source pictures never decoded: nothing refers to them and the highlight does not show them.
        var skippedPictures = 0
        /// What mixing the music did, when there is music.
        var music: MusicMix.Outcome? = nil
    }

    private let input: InputFile
    private let video: MediaStream
    private let audio: MediaStream?
    private let analysis: Analysis
    private let origin: Double
    private let geometry: OutputGeometry
    private let quality: Quality
    private let reporter: ProgressReporter

    private let lean: Bool
    private let crop: CropPlan?
    private let frames: FrameRatePlan
    private let music: MusicMix?

    /// `lean`: a source beyond 4K (see `MediaLimits.leanDecodingBytes`). `crop`: the window to keep
    /// of each picture (another shape than the source's). `frames`: which pictures are shown.
    /// `music`: a soundtrack mixed under the sound.
    init(
        path: String, analysis: Analysis, quality: Quality, lean: Bool = false, crop: CropPlan? = nil, frames: FrameRatePlan,
        music: MusicMix? = nil, reporter: ProgressReporter
    ) throws {
        (input, video, audio) = try Self.openSource(path, analysis: analysis)
        self.analysis = analysis
        self.origin = analysis.origin
        self.crop = crop
        self.geometry = OutputGeometry(info: analysis.info, quality: quality, crop: crop)
        self.quality = quality
        self.lean = lean
        self.frames = frames
        self.music = music
        self.reporter = reporter
    }

    /// Reopens the source for a render: its video, and its audio when the analysis could use it;
    /// the demuxer skips every other stream.
    static func openSource(_ path: String, analysis: Analysis) throws -> (InputFile, MediaStream, MediaStream?) {
        let (input, _, video, found) = try MediaProbe.open(path, limits: MediaLimits(maximumDuration: .infinity))
        let audio = analysis.info.hasAudio ? found : nil
        input.discardAll(except: Set([video.index] + (audio.map { [$0.index] } ?? [])))
        return (input, video, audio)
    }

    func render(_ segments: [Segment], to path: String) throws -> Result {
        let output = try OutputFile(path: path, format: "mp4")
        // Pictures stay in their stored orientation; the display matrix turns them upright, as the
        // source's did (no pixel rotation).
        var settings = Encoder.Video(
            codec: "libx264", width: geometry.scaledWidth, height: geometry.scaledHeight,
            pixelFormat: .yuv420p, timeBase: Self.videoTimeBase,
            frameRate: Self.rational(frames.outputRate),
            options: ["preset": Self.preset, "crf": Self.crf(quality), "profile": "high"])
        settings.threads = 2
        // Beyond 4K the source's decoder already holds hundreds of MB: x264 splits each picture
        // between its threads instead of keeping two pictures in flight, a third less memory.
        if lean { settings.options["x264-params"] = "sliced-threads=1" }
        // SDR BT.709, limited range, said explicitly (HDR sources arrive here tone-mapped).
        settings.color = .bt709
        let videoEncoder = try Encoder(video: settings, globalHeader: output.wantsGlobalHeader)
        let audioEncoder = try Encoder(
            audio: .init(
                codec: "aac", sampleRate: Self.sampleRate, channels: 2,
                sampleFormat: .floatPlanar, bitRate: 160_000),
            globalHeader: output.wantsGlobalHeader)
        let videoIndex = try output.addStream(for: videoEncoder, rotation: geometry.rotation)
        let audioIndex = try output.addStream(for: audioEncoder)
        try output.writeHeader(options: ["movflags": "+faststart"])

        let sound = AudioAssembler(encoder: audioEncoder, music: music) { try output.write($0, stream: audioIndex) }
        // Reading (demux, decode, scale, resample) runs on its own thread while this one tone-maps
        // (HDR) and encodes.
        let queue = RenderQueue(capacity: 4)
        let reader = try SegmentReader(
            input: input, video: video, audio: audio, analysis: analysis, geometry: geometry,
            crop: crop, frames: frames, cancellation: reporter.cancellation)
        let toneMapper = reader.toneMapper
        let readerDone = DispatchSemaphore(value: 0)
        try OwnThread.start(name: "moments-reader", stackSize: 4 << 20) {
            do {
                try reader.read(segments, into: queue)
            } catch {
                queue.fail(error)
            }
            readerDone.signal()
        }
        defer {
            queue.close()
            readerDone.wait()
        }
        // Each picture is held until the next one (or its segment's end) says how long it shows:
        // its packet carries that duration, so the last picture of a variable-rate source lasts
        // as long as it did there and the track ends where the sound does.
        var held: Frame?
        var durations: [Int64: Int64] = [:]
        var skippedPictures = 0
        var encoded = 0
        func write(_ packet: Packet) throws {
            if let pts = packet.pts, let duration = durations.removeValue(forKey: pts) { packet.duration = duration }
            try output.write(packet, stream: videoIndex)
        }
        func encode(_ picture: Frame, until end: Int64) throws {
            let pts = picture.pts ?? 0
            durations[pts] = max(1, end - pts)
            try videoEncoder.encode(picture, write)
            encoded += 1
        }
        loop: while true {
            switch try queue.take() {
            case .segment(let samples):
                sound.beginSegment(samples: samples)
            case .video(let scaled, let progress):
                let picture = try toneMapper?.mapped(scaled) ?? scaled
                if let held { try encode(held, until: picture.pts ?? 0) }
                held = picture
                try reporter.report(.rendering, progress)
            case .audio(let samples, let offset):
                try sound.add(samples, at: offset)
            case .endSegment(let end):
                if let last = held { try encode(last, until: end) }
                held = nil
                try sound.endSegment()
            case .finished(let skipped):
                skippedPictures = skipped
                break loop
            }
        }
        // A damaged file whose pictures the analysis read but a second decode from the keyframes
        // does not give (timestamps that jump, a stream that decodes only in order): no highlight.
        guard encoded > 0 else {
            throw MomentsError(
                .corruptMedia,
                "No picture of the video could be decoded where the highlight shows it; the file looks damaged. Export the video again and retry.")
        }
        try videoEncoder.encode(nil, write)
        try sound.finish()
        try output.finish()
        let duration = segments.reduce(0) { $0 + $1.duration }
        return Result(
            duration: duration, width: geometry.width, height: geometry.height, silentAudio: audio == nil && music == nil,
            skippedPictures: skippedPictures, music: sound.mixed)
    }

    /// x264's preset and quality per output quality, chosen by `scripts/bench-encode-settings` on
    /// 1080p phone footage: superfast at CRF 23 gives SSIM 0.972 at 6.9 Mbit/s and 118 fps, where
    /// veryfast at CRF 21 with the 3-frame lookahead used before gave 0.939 at 2.3 Mbit/s and 91 fps
    /// (a short lookahead starves veryfast's macroblock tree), and veryfast with its own lookahead
    /// 0.959 at 4.0 Mbit/s and 81 fps, no better than superfast at CRF 25 (0.960, 4.2 Mbit/s,
    /// 131 fps). Superfast looks no frame ahead, so x264 keeps only its two frame threads' pictures.
    static let preset = "superfast"

    static func crf(_ quality: Quality) -> String {
        switch quality {
        case .high: "23"
        case .medium: "24"
        case .low: "25"
        case .original: "20"  // at the source's size, for a source that cannot be copied
        }
    }

    static func rational(_ fps: Double) -> Rational {
        guard fps > 0, fps.isFinite else { return Rational(30, 1) }
        return Rational(approximating: fps)
    }
}
