import Media
import MomentsModel

extension InputFile {
    /// Seeks so that decoding `video` from the next packet reaches the picture at `time` (stream
    /// seconds) from the keyframe at or before it. A demuxer that finds times by searching the file
    /// (MPEG-TS) can land past that keyframe, and every picture before the next one would be lost:
    /// then it seeks a second earlier, two, four, … until the first packet is that keyframe or one
    /// before it, or the file's start. `index` (the analysis's) says which keyframe it is; without
    /// one, as in a damaged file, the demuxer's own seek is all there is.
    func seek(_ video: MediaStream, toDecode time: Double, index: PacketIndex) throws {
        let wanted = video.ticks(time)
        guard let key = index.lastKeyframe(atOrBefore: wanted) else {
            try seek(stream: video, to: time)
            return
        }
        let keyTime = index.seconds(key.pts)
        let packet = Packet()
        var back = 0.0
        while true {
            let target = min(time, keyTime) - back
            try seek(stream: video, to: target)
            var first: Int64?
            for _ in 0..<10_000 {
                guard (try? read(into: packet)) == true else { break }
                if packet.streamIndex == video.index {
                    first = packet.dts ?? packet.pts
                    break
                }
            }
            // Landed at or before the keyframe, or already before the stream's start: the same seek again.
            if first.map({ $0 <= key.dts }) ?? true || target < index.seconds(index.firstDecodeTimestamp) - 1 {
                try seek(stream: video, to: target)
                return
            }
            back = max(1, back * 2)
        }
    }
}

extension PacketIndex {
    /// The first packet's decode timestamp (0 without packets).
    var firstDecodeTimestamp: Int64 { entries.first?.dts ?? 0 }

    /// The container keyframe presented last at or before `ticks`.
    func lastKeyframe(atOrBefore ticks: Int64) -> Entry? {
        var best: Entry?
        for entry in entries where entry.isKeyframe && entry.pts <= ticks && entry.pts > (best?.pts ?? .min) { best = entry }
        return best
    }
}
