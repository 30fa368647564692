import CFFmpeg
import Foundation
import Media
import MomentsModel

/// Renders a highlight by copying the source's compressed pictures, GOP by GOP: no video decode,
/// no encode. One source means one codec configuration (`avcC`/`hvcC`), written once.
///
/// Timestamps: each segment's pictures keep their source spacing, shifted so the segment follows
/// the previous one. Decode timestamps are laid anew over the whole highlight (the k-th packet's is
/// the k-th smallest presentation time, less one constant composition offset), so they rise across
/// every join even where a segment lost leading pictures. A segment starting on an HEVC CRA drops
/// the CRA's RASL pictures and marks it BLA, so every decoder starts there cleanly. The source's
/// display matrix and HDR metadata are carried; HEVC is tagged `hvc1` as AVPlayer requires.
/// Audio is decoded, cut sample-exact to each segment's shown span and encoded as AAC, as on the
/// encode path, so it stays on the pictures' clock at every join.
final class CopyRenderer {
    private let input: InputFile
    private let video: MediaStream
    private let audio: MediaStream?
    private let analysis: Analysis
    private let grid: KeyframeGrid
    private let reporter: ProgressReporter

    /// The packet index no longer matches what the file hands out (it changed, or the demuxer
    /// cannot seek exactly): the highlight is encoded instead.
    struct IndexMismatch: Error { let detail: String }

    init(path: String, analysis: Analysis, grid: KeyframeGrid, reporter: ProgressReporter) throws {
        (input, video, audio) = try Renderer.openSource(path, analysis: analysis)
        self.analysis = analysis
        self.grid = grid
        self.reporter = reporter
    }

    /// One packet of the output: which source packet, and its new presentation time.
    private struct Planned {
        var packet: Int
        var pts: Int64
        var dts: Int64 = 0
    }

    func render(_ ranges: [CopyRange], to path: String) throws -> Renderer.Result {
        let entries = analysis.packets.entries
        guard let bitstream = analysis.packets.bitstream else { throw IndexMismatch(detail: "no bitstream layout") }

        // Plan every output packet and its timestamps before writing one.
        var plans: [[Planned]] = []
        var offset: Int64 = 0
        var spans: [(start: Int64, end: Int64)] = []
        for range in ranges {
            let first = grid.points[range.first]
            let start = first.startTicks, end = grid.endTicks(before: range.end)
            var planned: [Planned] = []
            let stop = range.end < grid.count ? grid.points[range.end].packet : entries.count
            for k in first.packet..<stop {
                // The RASL pictures of the segment's first CRA reference the GOP before it.
                if k < first.gopEnd && entries[k].kind == .rasl { continue }
                planned.append(Planned(packet: k, pts: entries[k].pts - start + offset))
            }
            plans.append(planned)
            spans.append((start, end))
            offset += end - start
        }
        let order = plans.joined().map(\.pts).sorted()
        var composition: Int64 = 0
        var k = 0
        for planned in plans {
            for p in planned {
                composition = max(composition, order[k] - p.pts)
                k += 1
            }
        }
        k = 0
        var previous = Int64.min
        for s in plans.indices {
            for j in plans[s].indices {
                var dts = order[k] - composition
                if previous != .min && dts <= previous { dts = previous + 1 }  // equal timestamps in a damaged source
                plans[s][j].dts = dts
                previous = dts
                k += 1
            }
        }

        let output = try OutputFile(path: path, format: "mp4")
        let videoIndex = try output.addStream(copying: video, tag: bitstream.codec == .hevc ? "hvc1" : "avc1")
        let audioEncoder = try Encoder(audio: .init(codec: "aac", sampleRate: Renderer.sampleRate, channels: 2,
                                                    sampleFormat: AV_SAMPLE_FMT_FLTP, bitRate: 160_000),
                                       globalHeader: output.wantsGlobalHeader)
        let audioIndex = try output.addStream(for: audioEncoder)
        try output.writeHeader(options: ["movflags": "+faststart"])
        let sound = AudioAssembler(encoder: audioEncoder) { try output.write($0, stream: audioIndex) }
        let audioDecoder = try audio.map { try Decoder(stream: $0) }
        let frame = Frame()
        let packet = Packet()
        let secondsPerTick = analysis.packets.secondsPerTick
        let total = Double(offset) * secondsPerTick
        let rate = Double(Renderer.sampleRate)
        var outputStart = 0.0

        for (s, range) in ranges.enumerated() {
            let shownStart = Double(spans[s].start) * secondsPerTick - analysis.origin
            let shownLength = Double(spans[s].end - spans[s].start) * secondsPerTick
            let outputEnd = outputStart + shownLength
            let sampleCount = Int((outputEnd * rate).rounded()) - Int((outputStart * rate).rounded())
            sound.beginSegment(samples: sampleCount)
            let resampler = Resampler(sampleRate: Renderer.sampleRate, channels: 2, format: AV_SAMPLE_FMT_FLTP)
            let planned = plans[s]
            let firstPacket = grid.points[range.first].packet
            try input.seek(stream: video, toDecodeTimestamp: entries[firstPacket].dts)
            audioDecoder?.flush()
            var cursor = firstPacket
            var next = 0
            let stop = range.end < grid.count ? grid.points[range.end].packet : entries.count
            var audioDone = audioDecoder == nil

            func takeAudio(_ frame: Frame) throws {
                guard !audioDone, let stream = audio, let ticks = frame.timestamp else { return }
                let t = stream.seconds(ticks) - analysis.origin
                let at = Int(((t - shownStart) * rate).rounded())
                if at >= sampleCount { audioDone = true; return }
                let converted = try resampler.convert(frame)
                try sound.add(converted, at: at)
                if at + converted.sampleCount >= sampleCount { audioDone = true }
            }

            while cursor < stop || !audioDone {
                let more: Bool
                do { more = try input.read(into: packet) } catch { more = false }
                guard more else {
                    if cursor < stop { throw IndexMismatch(detail: "the file ended before packet \(cursor)") }
                    if let audioDecoder { try audioDecoder.decode(nil, into: frame, takeAudio) }
                    break
                }
                if packet.streamIndex == video.index {
                    guard cursor < stop, let dts = packet.dts else { continue }
                    if dts < entries[cursor].dts { continue }  // before the segment (an inexact seek)
                    guard dts == entries[cursor].dts, packet.pts == entries[cursor].pts else {
                        throw IndexMismatch(detail: "packet \(cursor) is not where the index says")
                    }
                    if next < planned.count && planned[next].packet == cursor {
                        let p = planned[next]
                        if cursor == firstPacket && entries[cursor].kind == .cra {
                            _ = try packet.withWritableBytes { bitstream.markCleanRandomAccessAsBrokenLink($0) }
                        }
                        packet.isKeyframe = entries[cursor].kind.isRandomAccessPoint
                        packet.pts = p.pts
                        packet.dts = p.dts
                        try output.write(packet, stream: videoIndex)
                        next += 1
                        try reporter.report(.rendering, Double(p.pts) * secondsPerTick / max(total, 0.001))
                    }
                    cursor += 1
                } else if let audioDecoder, packet.streamIndex == audio?.index, !audioDone {
                    do { try audioDecoder.decode(packet, into: frame, takeAudio) } catch { /* damaged audio: silence */ }
                }
            }
            try sound.endSegment()
            outputStart = outputEnd
        }
        try sound.finish()
        try output.finish()
        return Renderer.Result(duration: total, width: analysis.info.displayWidth, height: analysis.info.displayHeight,
                               silentAudio: audio == nil)
    }
}
