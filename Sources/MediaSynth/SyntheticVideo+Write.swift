import Foundation
import Media

extension SyntheticVideo {
    /// Encodes this video to `path` with the project's own encoder and muxer.
    public func write(to path: String) throws {
        let output = try OutputFile(path: path, format: container)
        let globalHeader = output.wantsGlobalHeader
        let (timeBase, rate) = timing
        guard let format = PixelFormat(name: pixelFormat) else { throw FFmpegError.invalidData("unknown pixel format \(pixelFormat)") }
        var settings = Encoder.Video(
            codec: videoCodec, width: width, height: height, pixelFormat: format,
            timeBase: timeBase, frameRate: rate, options: encoderOptions)
        settings.gopSize = gopSize
        settings.bitRate = bitRate
        settings.threads = 2
        settings.sampleAspectRatio = Rational(Int32(sampleAspectRatio.0), Int32(sampleAspectRatio.1))
        switch colorTags {
        case .bt709: settings.color = .bt709
        case .hlg: settings.color = .bt2020(transfer: .hlg)
        case nil: break
        }
        let videoEncoder = try hasVideo ? Encoder(video: settings, globalHeader: globalHeader) : nil
        let videoIndex = try videoEncoder.map { try output.addStream(for: $0, rotation: rotation) } ?? -1

        var audioEncoder: Encoder?
        var audioIndex = -1
        if let audio {
            let (sampleFormat, rate) = Self.audioFormat(for: audio, preferredRate: audioSampleRate)
            let encoder = try Encoder(
                audio: .init(
                    codec: audio.rawValue, sampleRate: rate, channels: 2,
                    sampleFormat: sampleFormat, bitRate: 128_000), globalHeader: globalHeader)
            audioIndex = try output.addStream(for: encoder)
            audioEncoder = encoder
        }
        if let timecode { output.setMetadata("timecode", timecode) }
        try output.writeHeader()

        let painter = ScenePainter(video: self)
        let canvas = try Frame.video(width: width, height: height, format: .yuv420p)
        let scratch = try Frame.video(width: width, height: height, format: .yuv420p)
        let converter = format == .yuv420p || colorTags == .hlg ? nil : Scaler(width: width, height: height, format: format, filter: .fast)
        // HLG footage is the painted (BT.709) picture converted to HLG BT.2020, its reference white
        // at 203 cd/m² (ITU-R BT.2408): what an SDR shot looks like recorded in HLG.
        let toHLG =
            try colorTags == .hlg
            ? FilterGraph(
                width: width, height: height, format: .yuv420p,
                description:
                    "zscale=tin=bt709:min=bt709:pin=bt709:rin=tv:t=arib-std-b67:p=bt2020:m=bt2020nc:r=tv:npl=203,format=\(pixelFormat)") : nil
        canvas.color = .bt709
        var sound = SoundTrack(video: self, sampleRate: Int(audioEncoder?.sampleRate ?? 48000))
        let marks = Set(syncMarks)
        let ticksPerSecond = 1 / timeBase.value
        let audioEnd = min(duration, audioDuration ?? duration)

        for index in 0..<frameCount {
            if let videoEncoder {
                try paint(
                    frame: index - index % max(1, heldFrames), painter: painter, into: canvas, scratch: scratch,
                    marked: marks.contains(index))
                var picture = try converter?.scaled(canvas) ?? canvas
                if let toHLG { try toHLG.filter(canvas) { picture = try $0.clone() } }
                picture.pts = Int64(((startTime + time(ofFrame: index)) * ticksPerSecond).rounded())
                picture.pictureType = forcedKeyframes.contains(index) ? .intra : .unspecified
                try videoEncoder.encode(picture) { try output.write($0, stream: videoIndex) }
            }
            if let audioEncoder {
                try sound.encode(until: min(audioEnd, time(ofFrame: index + 1)), with: audioEncoder) { try output.write($0, stream: audioIndex) }
            }
        }
        try videoEncoder?.encode(nil) { try output.write($0, stream: videoIndex) }
        if let audioEncoder {
            try sound.encode(until: audioEnd, with: audioEncoder, final: true) { try output.write($0, stream: audioIndex) }
        }
        try output.finish()
    }

    /// The time base the pictures are stamped in and the nominal frame rate the encoder is told.
    var timing: (timeBase: Rational, rate: Rational) {
        if !rateRuns.isEmpty || startTime != 0 { return (Rational(1, 90_000), Rational(approximating: nominalRate)) }
        let (num, den) = ntscRate ? (Int32(frameRate * 1000), Int32(1001)) : (Int32(frameRate), Int32(1))
        // Alternating spacing is 0.75 and 1.25 of a frame: quarter-frame ticks.
        return (Rational(den, variableFrameRate ? num * 4 : num), Rational(num, den))
    }

    private func paint(frame index: Int, painter: ScenePainter, into canvas: Frame, scratch: Frame, marked: Bool) throws {
        try canvas.makeWritable()
        let parts = painter.composition(of: index)
        let (y, ys) = canvas.plane(0), (u, cs) = canvas.plane(1), (v, _) = canvas.plane(2)
        painter.paint(scene: parts[0].scene, frame: index, gain: parts[0].gain * brightness, y: y, yStride: ys, u: u, v: v, cStride: cs)
        defer {
            // Washes towards white: a fade through white, a camera flash, a sync mark.
            let flash = marked || effects.contains { $0.kind == .flash && index >= $0.startFrame && index < $0.startFrame + $0.frames }
            let white = max(painter.whiteness(of: index), flash ? 0.6 : 0)
            if white > 0 {
                let keep = Int((1 - white) * 256), add = Int(white * 256)
                for row in 0..<height { for col in 0..<width { y[row * ys + col] = UInt8((Int(y[row * ys + col]) * keep + 235 * add) >> 8) } }
                for row in 0..<((height + 1) / 2) {
                    for col in 0..<((width + 1) / 2) {
                        u[row * cs + col] = UInt8((Int(u[row * cs + col]) * keep + 128 * add) >> 8)
                        v[row * cs + col] = UInt8((Int(v[row * cs + col]) * keep + 128 * add) >> 8)
                    }
                }
            }
            if noise > 0 { addNoise(y, stride: ys, frame: index) }
        }
        guard parts.count == 2 else { return }
        try scratch.makeWritable()
        let (y2, _) = scratch.plane(0), (u2, _) = scratch.plane(1), (v2, _) = scratch.plane(2)
        painter.paint(scene: parts[1].scene, frame: index, gain: parts[1].gain * brightness, y: y2, yStride: ys, u: u2, v: v2, cStride: cs)
        let alpha = Int(parts[1].weight * 256)
        func blend(_ a: UnsafeMutablePointer<UInt8>, _ b: UnsafeMutablePointer<UInt8>, _ count: Int) {
            for i in 0..<count { a[i] = UInt8((Int(a[i]) * (256 - alpha) + Int(b[i]) * alpha) >> 8) }
        }
        blend(y, y2, ys * height)
        blend(u, u2, cs * ((height + 1) / 2))
        blend(v, v2, cs * ((height + 1) / 2))
    }

    private func addNoise(_ y: UnsafeMutablePointer<UInt8>, stride: Int, frame: Int) {
        let pattern = frame / max(1, noiseHeldFrames)
        var state = UInt32(truncatingIfNeeded: pattern &* 2_654_435_761) | 1
        let span = UInt32(2 * noise + 1)
        for row in 0..<height {
            let line = y + row * stride
            for col in 0..<width {
                state ^= state << 13; state ^= state >> 17; state ^= state << 5  // xorshift32
                let value = Int(line[col]) + Int(state % span) - noise
                line[col] = UInt8(max(16, min(235, value)))
            }
        }
    }

    private static func audioFormat(for codec: AudioCodec, preferredRate: Int) -> (SampleFormat, Int) {
        switch codec {
        case .aac: (.floatPlanar, preferredRate)
        case .opus: (.float, 48000)
        case .mp3: (.floatPlanar, preferredRate == 48000 ? 44100 : preferredRate)
        case .pcm: (.int16, preferredRate)
        }
    }
}

/// The synthetic soundtrack: a quiet tone per scene, and loud percussive bursts during events.
struct SoundTrack {
    let video: SyntheticVideo
    let sampleRate: Int
    private var position = 0
    private var resampler: Resampler?
    private var noise = SplitMix64(seed: 42)
    // Looked up for every sample: worked out once.
    private let events: [ClosedRange<Double>]
    private let sceneStarts: [Double]

    init(video: SyntheticVideo, sampleRate: Int) {
        self.video = video
        self.sampleRate = sampleRate
        events = video.eventTimes
        sceneStarts = [0] + video.boundaryTimes
        marks = video.syncMarkTimes.sorted()
        origin = Int64((video.startTime * Double(sampleRate)).rounded())
    }

    private let marks: [Double]
    /// The first sample's timestamp (`startTime` in samples).
    private let origin: Int64

    /// Amplitude of the tone (about −34 dBFS) and of event bursts (peaks near −3 dBFS).
    static let toneLevel = 0.02
    static let burstLevel = 0.7
    /// Bursts start every `burstInterval` seconds inside an event.
    static let burstInterval = 0.25

    private mutating func sample(at index: Int) -> Float {
        let t = Double(index) / Double(sampleRate)
        let scene = max(0, (sceneStarts.lastIndex { $0 <= t }) ?? 0)
        var value = Self.toneLevel * sin(2 * Double.pi * video.scenes[scene].toneHz * t)
        if let track = video.soundtrack {
            // Linear interpolation between the track's samples.
            let position = t * Double(video.soundtrackRate), i = Int(position)
            let a = i < track.count ? Double(track[i]) : 0, b = i + 1 < track.count ? Double(track[i + 1]) : 0
            value = a + (b - a) * (position - Double(i))
        }
        if let mark = Self.last(in: marks, atOrBefore: t), t - mark < SyntheticVideo.syncClickSeconds {
            value += SyntheticVideo.syncClickLevel * sin(2 * Double.pi * 2000 * (t - mark))
        }
        for range in events where range.contains(t) {
            let since = (t - range.lowerBound).truncatingRemainder(dividingBy: Self.burstInterval)
            let white = Double(Int64(bitPattern: noise.next() >> 11) % 2001) / 1000 - 1
            value += Self.burstLevel * exp(-since * 18) * white
        }
        return Float(max(-1, min(1, value)))
    }

    /// The last of `sorted` at or before `t`.
    static func last(in sorted: [Double], atOrBefore t: Double) -> Double? {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo > 0 ? sorted[lo - 1] : nil
    }

    mutating func encode(until seconds: Double, with encoder: Encoder, final: Bool = false, _ write: (Packet) throws -> Void) throws {
        let chunk = encoder.frameSize > 0 ? encoder.frameSize : 1024
        let end = Int((seconds * Double(sampleRate)).rounded())
        while position + (final ? 0 : chunk) <= end && position < end {
            let count = final ? min(chunk, end - position) : chunk
            let planar = try Frame.audio(samples: count, sampleRate: sampleRate, channels: 2, format: .floatPlanar)
            let left = UnsafeMutableRawPointer(planar.plane(0).0).assumingMemoryBound(to: Float.self)
            let right = UnsafeMutableRawPointer(planar.plane(1).0).assumingMemoryBound(to: Float.self)
            for i in 0..<count {
                let s = sample(at: position + i)
                left[i] = s
                right[i] = s
            }
            let target = encoder.sampleFormat
            let frame: Frame
            if target == .floatPlanar {
                frame = planar
            } else {
                if resampler == nil { resampler = Resampler(sampleRate: sampleRate, channels: 2, format: target) }
                frame = try resampler!.convert(planar)
            }
            frame.pts = origin + Int64(position)
            position += count
            try encoder.encode(frame, write)
        }
        if final { try encoder.encode(nil, write) }
    }
}
