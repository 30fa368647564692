import Media

/// Joins copies of one file end to end without re-encoding (for long benchmark footage).
public enum Concatenation {
    /// Writes `times` copies of `source` one after another to `output` (same codecs, stream copy).
    public static func repeatFile(_ source: String, times: Int, to output: String) throws {
        let probe = try InputFile(path: source)
        let streams = probe.streams.filter { $0.mediaType == .video || $0.mediaType == .audio }
        let out = try OutputFile(path: output)
        var map: [Int: Int] = [:]
        for stream in streams { map[stream.index] = try out.addStream(copying: stream) }
        try out.writeHeader()
        // Each copy starts where the longest stream of the previous one ended, plus a tenth of a
        // second so decode timestamps (which start before zero with B-frames) keep rising.
        var offset = 0.0
        for _ in 0..<times {
            let input = try InputFile(path: source)
            let packet = Packet()
            var end = offset
            while try input.read(into: packet) {
                guard let target = map[packet.streamIndex] else { continue }
                let stream = input.stream(packet.streamIndex)
                let shift = stream.ticks(offset)
                if let pts = packet.pts { packet.pts = pts + shift }
                if let dts = packet.dts { packet.dts = dts + shift }
                end = max(end, stream.seconds((packet.pts ?? packet.dts ?? 0) + packet.duration))
                try out.write(packet, stream: target)
            }
            offset = end + 0.1
        }
        try out.finish()
    }
}
