import Foundation
import Media
import MomentsSupport

/// The reading side of a render: seeks to each segment, decodes only its frames and audio, scales
/// the pictures (HDR ones tone-mapped by the writer), resamples the sound, and queues them in output order.
final class SegmentReader: @unchecked Sendable {  // Used by the reader thread only, once started.
    private let input: InputFile
    private let video: MediaStream
    private let audio: MediaStream?
    private let origin: Double
    private let pictures: PicturePipeline
    private let frames: FrameRatePlan

    private let info: MediaInfo
    private let index: PacketIndex
    /// Every picture's time (seconds from `origin`), sorted.
    private let frameTimes: [Double]

    private let cancellation: CancellationFlag

    /// Tone-maps the HDR pictures this reader queues scaled but still 10-bit (nil for SDR): the
    /// writer's half of the picture pipeline.
    var toneMapper: ToneMapper? { pictures.toneMapper }

    init(
        input: InputFile, video: MediaStream, audio: MediaStream?, analysis: Analysis, geometry: OutputGeometry,
        crop: CropPlan? = nil, frames: FrameRatePlan, cancellation: CancellationFlag
    ) throws {
        self.cancellation = cancellation
        self.frames = frames
        let info = analysis.info
        self.info = info
        index = analysis.packets
        frameTimes = analysis.frameTimes
        self.input = input
        self.video = video
        self.audio = audio
        origin = analysis.origin
        pictures = try PicturePipeline(geometry: geometry, info: info, crop: crop)
    }

    struct Stopped: Error {}

    /// The closest two output pictures may be, in 90 kHz ticks (1/240 s: the fastest phone slow motion).
    static let minimumSpacing: Int64 = 375
    /// Decoded pictures held to put them in display order: a decoder may hand them out of order
    /// (FFmpeg 5.1's HEVC after a seek into an open GOP), each with its own timestamp.
    static let reorderDepth = 4

    func read(_ segments: [Segment], into queue: RenderQueue) throws {
        func put(_ item: RenderItem) throws { if !queue.put(item) { throw Stopped() } }
        let videoDecoder = try Decoder(stream: video, options: .video(for: info, threads: 2, analysis: false))
        let audioDecoder = try audio.map { try Decoder(stream: $0) }
        let total = segments.reduce(0) { $0 + $1.duration }
        var outputStart = 0.0
        var lastPTS: Int64 = -1
        var skippedPictures = 0
        let frame = Frame()
        let packet = Packet()

        for segment in segments {
            let outputEnd = outputStart + segment.duration
            let sound = SegmentSound(
                stream: audio, origin: origin, start: segment.start,
                outputStart: outputStart, outputEnd: outputEnd)
            try put(.segment(samples: sound.samples))
            try input.seek(video, toDecode: segment.start + origin, index: index)
            videoDecoder.flush()
            audioDecoder?.flush()
            var videoDone = false
            // A timestamp this far from FFmpeg's own guess is stale: reordering moves pictures by a few frames.
            let staleAfter = video.ticks(max(0.5, 8 * info.nominalFrameInterval))
            // The segment's first picture: where its output intervals start when pictures are left out.
            let first = frameTimes.firstIndex(atOrAfter: segment.start)
            let anchor = first < frameTimes.count ? frameTimes[first] : segment.start
            // The segment's pictures as decoded, made ready and held by time, each passed on once
            // `reorderDepth` more have come; nil for one past the segment's end.
            var held: [(time: Double, picture: Frame?)] = []

            func takeVideo(_ frame: Frame) throws {
                guard !videoDone, let ticks = frame.presentationTimestamp(farApart: staleAfter) else { return }
                let t = video.seconds(ticks) - origin
                if t < segment.start - 1e-6 { return }
                var picture: Frame?
                // A picture that would show for less than the spacing below before the segment
                // ends (an end set by the music's beat, not on a picture) is left out: the next
                // segment's first picture, at the end, would otherwise be the one dropped.
                if t < segment.end - max(1e-6, Double(Self.minimumSpacing) / 90_000) {
                    // A picture the frame rate leaves out is never made ready.
                    guard frames.shows(t, anchor: anchor) else { return }
                    var prepared = try pictures.scaled(frame, time: t)
                    // The decoder reuses `frame`: a picture passed through as it is needs its own reference.
                    if prepared === frame { prepared = try frame.clone() }
                    picture = prepared
                }
                held.insert((t, picture), at: held.firstIndex { $0.time > t } ?? held.endIndex)
                while held.count > Self.reorderDepth { try pass(held.removeFirst()) }
            }
            func pass(_ ready: (time: Double, picture: Frame?)) throws {
                guard !videoDone else { return }
                guard let picture = ready.picture else { videoDone = true; return }
                let t = ready.time
                // A picture less than 1/240 s after the last one kept (a duplicate, a timestamp
                // going back, a damaged stts) is dropped, as a VFR muxer drops it: no player
                // shows it, and timestamps 1 tick apart break some.
                let pts = Int64(saturating: ((outputStart + t - segment.start) * 90_000).rounded())
                if lastPTS >= 0 && pts < lastPTS + Self.minimumSpacing { return }
                lastPTS = pts
                picture.pts = pts
                picture.pictureType = .unspecified
                try put(.video(picture, progress: (outputStart + t - segment.start) / max(total, 0.001)))
            }
            func takeAudio(_ frame: Frame) throws {
                if let (samples, offset) = try sound.take(frame) { try put(.audio(samples, offset: offset)) }
            }

            while !(videoDone && sound.isDone) {
                // Checked per packet: the pre-roll from the keyframe before a segment decodes
                // pictures that never reach the encoder, where progress (and its check) is reported.
                try cancellation.check()
                let more: Bool
                do { more = try input.read(into: packet) } catch { more = false }
                guard more else {
                    try videoDecoder.decode(nil, into: frame, takeVideo)
                    if let audioDecoder { try audioDecoder.decode(nil, into: frame, takeAudio) }
                    break
                }
                if packet.streamIndex == video.index {
                    if isUnseen(packet, in: segment, anchor: anchor) {
                        skippedPictures += 1
                        continue
                    }
                    try videoDecoder.decode(packet, into: frame, takeVideo)
                } else if let audioDecoder, packet.streamIndex == audio?.index {
                    // Damaged audio is silence; a stop goes on up.
                    do { try audioDecoder.decode(packet, into: frame, takeAudio) } catch is Stopped { throw Stopped() } catch {}
                }
            }
            while !held.isEmpty { try pass(held.removeFirst()) }
            try put(.endSegment(end: Int64(saturating: (outputEnd * 90_000).rounded())))
            outputStart = outputEnd
        }
        try put(.finished(skippedPictures: skippedPictures))
    }

    /// Whether `packet` holds a picture the highlight does not show and nothing refers to, so it
    /// need not be decoded: one before `segment` (the pre-roll from its keyframe) or one `frames`
    /// leaves out, and a non-reference picture of the top temporal layer. Only where the container
    /// stores the stream as MP4 does (its NAL units can be read) and the packet has a timestamp;
    /// pictures at or past the segment's end are decoded, as the first of them ends the segment.
    private func isUnseen(_ packet: Packet, in segment: Segment, anchor: Double) -> Bool {
        guard let bitstream = index.bitstream, let pts = packet.pts,
            let reference = bitstream.reference(packet.bytes), !reference.referenced,
            reference.layer == index.highestTemporalLayer
        else { return false }
        let t = video.seconds(pts) - origin
        return t < segment.start - 1e-6 || (t < segment.end - 1e-6 && !frames.shows(t, anchor: anchor))
    }
}
