import CFFmpeg
import Foundation
import Media
import MomentsModel

/// Renders the chosen segments into one MP4: H.264 (yuv420p) and AAC-LC 48 kHz stereo, `moov` first.
///
/// Only the chosen ranges are decoded (seek to the keyframe before each). Video frames keep their
/// source timing relative to the segment start; audio is placed by the same clock, sample-exact, so
/// the two stay in sync across every joint. Each joint gets a short audio fade. A source without
/// sound gets a silent AAC track, so every highlight plays the same way.
final class Renderer {
    static let sampleRate = 48_000
    static let fadeSamples = 480  // 10 ms
    static let videoTimeBase = AVRational(num: 1, den: 90_000)

    struct Result {
        var duration: Double
        var width: Int
        var height: Int
        var silentAudio: Bool
    }

    private let input: InputFile
    private let video: MediaStream
    private let audio: MediaStream?
    private let analysis: Analysis
    private let origin: Double
    private let geometry: OutputGeometry
    private let quality: Quality
    private let reporter: ProgressReporter

    init(path: String, analysis: Analysis, quality: Quality, reporter: ProgressReporter) throws {
        let (input, _, video, audio) = try MediaProbe.open(path, limits: MediaLimits(maximumDuration: .infinity))
        self.input = input
        self.video = video
        self.audio = analysis.info.hasAudio ? audio : nil
        self.analysis = analysis
        self.origin = analysis.origin
        self.geometry = OutputGeometry(info: analysis.info, quality: quality)
        self.quality = quality
        self.reporter = reporter
        input.discardAll(except: Set([video.index] + (self.audio.map { [$0.index] } ?? [])))
    }

    func render(_ segments: [Segment], to path: String) throws -> Result {
        let output = try OutputFile(path: path, format: "mp4")
        // Pictures stay in their stored orientation; the display matrix turns them upright, as the
        // source's did (no pixel rotation).
        var settings = Encoder.Video(codec: "libx264", width: geometry.scaledWidth, height: geometry.scaledHeight,
                                     pixelFormat: AV_PIX_FMT_YUV420P, timeBase: Self.videoTimeBase,
                                     frameRate: Self.rational(analysis.info.frameRate),
                                     options: ["preset": Self.preset(quality), "crf": Self.crf(quality), "profile": "high",
                                               // x264 keeps (threads + lookahead) frames with their half-pel
                                               // planes in flight, ~10 MB each at 1080p. Two frame threads and
                                               // a 3-frame lookahead keep the whole process under 300 MB
                                               // (measured 277 MB; the default lookahead and thread count
                                               // needed 350 MB, sliced threads were 30 % slower).
                                               "rc-lookahead": "3"])
        settings.threads = 2
        // SDR BT.709, limited range, said explicitly (HDR sources arrive here tone-mapped).
        (settings.colorPrimaries, settings.colorTransfer, settings.colorSpace, settings.colorRange) =
            (AVCOL_PRI_BT709, AVCOL_TRC_BT709, AVCOL_SPC_BT709, AVCOL_RANGE_MPEG)
        let videoEncoder = try Encoder(video: settings, globalHeader: output.wantsGlobalHeader)
        let audioEncoder = try Encoder(audio: .init(codec: "aac", sampleRate: Self.sampleRate, channels: 2,
                                                    sampleFormat: AV_SAMPLE_FMT_FLTP, bitRate: 160_000),
                                       globalHeader: output.wantsGlobalHeader)
        let videoIndex = try output.addStream(for: videoEncoder, rotation: geometry.rotation)
        let audioIndex = try output.addStream(for: audioEncoder)
        try output.writeHeader(options: ["movflags": "+faststart"])

        let sound = AudioAssembler(encoder: audioEncoder) { try output.write($0, stream: audioIndex) }
        // Reading (demux, decode, scale, resample) runs on its own thread while this one encodes.
        let queue = RenderQueue(capacity: 4)
        let reader = try SegmentReader(input: input, video: video, audio: audio, info: analysis.info, origin: origin, geometry: geometry)
        let readerDone = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                try reader.read(segments, into: queue)
            } catch {
                queue.fail(error)
            }
            readerDone.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        defer {
            queue.close()
            readerDone.wait()
        }
        loop: while true {
            switch try queue.take() {
            case .segment(let samples):
                sound.beginSegment(samples: samples)
            case .video(let picture, let progress):
                try videoEncoder.encode(picture) { try output.write($0, stream: videoIndex) }
                try reporter.report(.rendering, progress)
            case .audio(let samples, let offset):
                try sound.add(samples, at: offset)
            case .endSegment:
                try sound.endSegment()
            case .finished:
                break loop
            }
        }
        try videoEncoder.encode(nil) { try output.write($0, stream: videoIndex) }
        try sound.finish()
        try output.finish()
        let duration = segments.reduce(0) { $0 + $1.duration }
        return Result(duration: duration, width: geometry.width, height: geometry.height, silentAudio: audio == nil)
    }

    static func preset(_ quality: Quality) -> String {
        switch quality {
        case .high: "veryfast"
        case .medium: "veryfast"
        case .low: "faster"
        }
    }

    static func crf(_ quality: Quality) -> String {
        switch quality {
        case .high: "21"
        case .medium: "23"
        case .low: "25"
        }
    }

    static func rational(_ fps: Double) -> AVRational {
        guard fps > 0, fps.isFinite else { return AVRational(num: 30, den: 1) }
        return av_d2q(fps, 100_000)
    }
}

/// The reading side of a render: seeks to each segment, decodes only its frames and audio, scales
/// and rotates the pictures, resamples the sound, and queues them in output order.
final class SegmentReader: @unchecked Sendable {  // Used by the reader thread only, once started.
    private let input: InputFile
    private let video: MediaStream
    private let audio: MediaStream?
    private let origin: Double
    private let pictures: PicturePipeline

    private let info: MediaInfo

    init(input: InputFile, video: MediaStream, audio: MediaStream?, info: MediaInfo, origin: Double, geometry: OutputGeometry) throws {
        self.info = info
        self.input = input
        self.video = video
        self.audio = audio
        self.origin = origin
        pictures = try PicturePipeline(geometry: geometry, info: info)
    }

    struct Stopped: Error {}

    func read(_ segments: [Segment], into queue: RenderQueue) throws {
        func put(_ item: RenderItem) throws { if !queue.put(item) { throw Stopped() } }
        let videoDecoder = try Decoder(stream: video, options: .video(for: info, threads: 2, analysis: false))
        let audioDecoder = try audio.map { try Decoder(stream: $0) }
        let total = segments.reduce(0) { $0 + $1.duration }
        let rate = Double(Renderer.sampleRate)
        var outputStart = 0.0
        var lastPTS: Int64 = -1
        let frame = Frame()
        let packet = Packet()

        for segment in segments {
            let outputEnd = outputStart + segment.duration
            let sampleCount = Int((outputEnd * rate).rounded()) - Int((outputStart * rate).rounded())
            try put(.segment(samples: sampleCount))
            let resampler = Resampler(sampleRate: Renderer.sampleRate, channels: 2, format: AV_SAMPLE_FMT_FLTP)
            try input.seek(stream: video, to: segment.start + origin)
            videoDecoder.flush()
            audioDecoder?.flush()
            var videoDone = false
            var audioDone = audioDecoder == nil

            func takeVideo(_ frame: Frame) throws {
                guard !videoDone, let ticks = frame.timestamp else { return }
                let t = video.seconds(ticks) - origin
                if t < segment.start - 1e-6 { return }
                if t >= segment.end - 1e-6 { videoDone = true; return }
                var picture = try pictures.prepare(frame)
                // The decoder reuses `frame`: a picture passed through as it is needs its own reference.
                if picture === frame { picture = try frame.clone() }
                var pts = Int64(((outputStart + t - segment.start) * 90_000).rounded())
                if pts <= lastPTS { pts = lastPTS + 1 }
                lastPTS = pts
                picture.pointer.pointee.pts = pts
                picture.pointer.pointee.pict_type = AV_PICTURE_TYPE_NONE
                try put(.video(picture, progress: (outputStart + t - segment.start) / max(total, 0.001)))
            }
            func takeAudio(_ frame: Frame) throws {
                guard !audioDone, let stream = audio, let ticks = frame.timestamp else { return }
                let t = stream.seconds(ticks) - origin
                if t >= segment.end { audioDone = true; return }
                let converted = try resampler.convert(frame)
                let offset = Int(((t - segment.start) * rate).rounded())
                try put(.audio(converted, offset: offset))
                if offset + converted.sampleCount >= sampleCount { audioDone = true }
            }

            while !(videoDone && audioDone) {
                let more: Bool
                do { more = try input.read(into: packet) } catch { more = false }
                guard more else {
                    try videoDecoder.decode(nil, into: frame, takeVideo)
                    if let audioDecoder { try audioDecoder.decode(nil, into: frame, takeAudio) }
                    break
                }
                if packet.streamIndex == video.index {
                    try videoDecoder.decode(packet, into: frame, takeVideo)
                } else if let audioDecoder, packet.streamIndex == audio?.index {
                    do { try audioDecoder.decode(packet, into: frame, takeAudio) } catch is Stopped { throw Stopped() } catch { /* damaged audio: silence */ }
                }
            }
            try put(.endSegment)
            outputStart = outputEnd
        }
        try put(.finished)
    }
}

/// Scales decoded pictures to the output geometry (stored orientation) in yuv420p, tone-mapping
/// HDR pictures to SDR BT.709 on the way.
final class PicturePipeline {
    private let geometry: OutputGeometry
    private let scaler: Scaler
    private let toneMapper: ToneMapper?

    init(geometry: OutputGeometry, info: MediaInfo) throws {
        self.geometry = geometry
        let transfer = AVColorTransferCharacteristic(UInt32(max(0, av_color_transfer_from_name(info.colorTransfer ?? ""))))
        toneMapper = info.isHDR ? try ToneMapper(transfer: transfer) : nil
        scaler = Scaler(width: geometry.scaledWidth, height: geometry.scaledHeight,
                        format: toneMapper == nil ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUV420P10LE, filter: .bicubic)
    }

    func prepare(_ frame: Frame) throws -> Frame {
        let sized = frame.width == geometry.scaledWidth && frame.height == geometry.scaledHeight
            && (frame.pointer.pointee.sample_aspect_ratio.num == frame.pointer.pointee.sample_aspect_ratio.den
                || frame.pointer.pointee.sample_aspect_ratio.num == 0)
        if let toneMapper {
            var tenBit = frame
            if !sized || frame.pixelFormat != AV_PIX_FMT_YUV420P10LE {
                tenBit = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: AV_PIX_FMT_YUV420P10LE)
                try scaler.scale(frame, into: tenBit)
            }
            let target = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: AV_PIX_FMT_YUV420P)
            try toneMapper.map(tenBit, into: target)
            return target
        }
        // Already the right shape: hand the decoded picture over as it is.
        if sized && frame.pixelFormat == AV_PIX_FMT_YUV420P { return frame }
        // A fresh frame each time: the encoder may still hold a reference to the previous one.
        let target = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: AV_PIX_FMT_YUV420P)
        try scaler.scale(frame, into: target)
        return target
    }
}

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

    init(encoder: Encoder, write: @escaping (Packet) throws -> Void) {
        self.encoder = encoder
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
        let r = frame.pointer.pointee.ch_layout.nb_channels > 1 ? UnsafeRawPointer(frame.plane(1).0).assumingMemoryBound(to: Float.self) : l
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
        try flush(final: true)
        try encoder.encode(nil, write)
    }

    private func flush(final: Bool) throws {
        let size = max(1, encoder.frameSize)
        while left.count >= size || (final && !left.isEmpty) {
            let n = min(size, left.count)
            let frame = try Frame.audio(samples: n, sampleRate: Renderer.sampleRate, channels: 2, format: AV_SAMPLE_FMT_FLTP)
            let l = UnsafeMutableRawPointer(frame.plane(0).0).assumingMemoryBound(to: Float.self)
            let r = UnsafeMutableRawPointer(frame.plane(1).0).assumingMemoryBound(to: Float.self)
            for i in 0..<n { l[i] = left[i]; r[i] = right[i] }
            left.removeFirst(n)
            right.removeFirst(n)
            frame.pointer.pointee.pts = encoded
            encoded += Int64(n)
            try encoder.encode(frame, write)
        }
    }
}
