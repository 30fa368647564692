import Media

/// The source's video alone (every other stream discarded), for reading pictures at chosen
/// moments outside the render: the poster and thumbnails, the crop plan.
final class VideoFrames {
    private let input: InputFile
    private let video: MediaStream
    private let decoder: Decoder
    private let origin: Double
    private let index: PacketIndex
    private let cancellation: CancellationFlag

    init(path: String, analysis: Analysis, cancellation: CancellationFlag) throws {
        let (input, _, video, _) = try MediaProbe.open(path, limits: MediaLimits(maximumDuration: .infinity))
        input.discardAll(except: [video.index])
        self.input = input
        self.video = video
        origin = analysis.origin
        index = analysis.packets
        self.cancellation = cancellation
        decoder = try Decoder(stream: video, options: .video(for: analysis.info, threads: 2, analysis: false))
    }

    /// Seeks to the keyframe at or before `start` (source seconds) and hands every picture decoded
    /// from there, with its source time, to `body` until it answers false or the video ends. The
    /// frame is the decoder's: clone it to keep it. Checks for cancellation at every packet.
    func decode(from start: Double, _ body: (Frame, Double) throws -> Bool) throws {
        try input.seek(video, toDecode: start + origin, index: index)
        decoder.flush()
        let frame = Frame()
        let packet = Packet()
        var more = true
        func take(_ decoded: Frame) throws {
            guard more, let ticks = decoded.timestamp else { return }
            more = try body(decoded, video.seconds(ticks) - origin)
        }
        while more {
            try cancellation.check()
            let read: Bool
            do { read = try input.read(into: packet) } catch { read = false }
            guard read else {
                try decoder.decode(nil, into: frame, take)
                return
            }
            if packet.streamIndex == video.index { try decoder.decode(packet, into: frame, take) }
        }
    }
}
