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

    /// One packet of the output: which source packet, and its new timestamps.
    private struct Planned {
        var packet: Int
        var pts: Int64
        var dts: Int64 = 0
        /// How long the picture shows: to the next one, or to its segment's end.
        var duration: Int64 = 0
    }

    /// One segment of the output: the source packets it copies and the span it shows (ticks).
    private struct SegmentPlan {
        var packets: [Planned]
        var start: Int64
        var end: Int64
    }

    func render(_ ranges: [CopyRange], to path: String) throws -> Renderer.Result {
        let entries = analysis.packets.entries
        guard let bitstream = analysis.packets.bitstream else { throw IndexMismatch(detail: "no bitstream layout") }

        // Plan every output packet and its timestamps before writing one.
        var plans: [SegmentPlan] = []
        var offset: Int64 = 0
        for range in ranges {
            let first = grid.points[range.first]
            let start = first.startTicks, end = grid.endTicks(before: range.end)
            // The RASL pictures of the segment's first CRA reference the GOP before it.
            var packets = (first.packet..<grid.packet(before: range.end, of: entries.count))
                .filter { $0 >= first.gopEnd || entries[$0].kind != .rasl }
                .map { Planned(packet: $0, pts: entries[$0].pts &- start &+ offset) }
            // Each picture's duration, in presentation order: the last one's runs to the segment's
            // end, so the track ends where the sound does (a source's own last packet may say 0).
            let shown = packets.indices.sorted { packets[$0].pts < packets[$1].pts }
            for (k, index) in shown.enumerated() {
                let next = k + 1 < shown.count ? packets[shown[k + 1]].pts : offset &+ (end &- start)
                packets[index].duration = max(1, next &- packets[index].pts)
            }
            plans.append(SegmentPlan(packets: packets, start: start, end: end))
            offset &+= end &- start  // wrapping: a damaged index cannot trap, only fail the muxer
        }
        // The k-th packet decodes at the k-th presentation time, less one composition offset that
        // keeps every decode time at or before its presentation time.
        let presented = plans.flatMap { $0.packets.map(\.pts) }
        let order = presented.sorted()
        let composition = zip(order, presented).map { $0 &- $1 }.max().map { max(0, $0) } ?? 0
        var k = 0
        var previous = Int64.min
        for s in plans.indices {
            for j in plans[s].packets.indices {
                var dts = order[k] &- composition
                if previous != .min && dts <= previous { dts = previous &+ 1 }  // equal timestamps in a damaged source
                plans[s].packets[j].dts = dts
                previous = dts
                k += 1
            }
        }

        let output = try OutputFile(path: path, format: "mp4")
        let videoIndex = try output.addStream(copying: video, tag: bitstream.codec == .hevc ? "hvc1" : "avc1")
        let audioEncoder = try Encoder(
            audio: .init(
                codec: "aac", sampleRate: Renderer.sampleRate, channels: 2,
                sampleFormat: .floatPlanar, bitRate: 160_000),
            globalHeader: output.wantsGlobalHeader)
        let audioIndex = try output.addStream(for: audioEncoder)
        try output.writeHeader(options: ["movflags": "+faststart"])
        let sound = AudioAssembler(encoder: audioEncoder) { try output.write($0, stream: audioIndex) }
        let audioDecoder = try audio.map { try Decoder(stream: $0) }
        let frame = Frame()
        let packet = Packet()
        let secondsPerTick = analysis.packets.secondsPerTick
        let total = Double(offset) * secondsPerTick
        var outputStart = 0.0

        for (plan, range) in zip(plans, ranges) {
            let outputEnd = outputStart + Double(plan.end - plan.start) * secondsPerTick
            let cut = SegmentSound(
                stream: audio, origin: analysis.origin,
                start: Double(plan.start) * secondsPerTick - analysis.origin,
                outputStart: outputStart, outputEnd: outputEnd)
            sound.beginSegment(samples: cut.samples)
            let planned = plan.packets
            let firstPacket = grid.points[range.first].packet
            try input.seek(stream: video, toDecodeTimestamp: entries[firstPacket].dts)
            audioDecoder?.flush()
            var cursor = firstPacket
            var next = 0
            let stop = grid.packet(before: range.end, of: entries.count)

            func takeAudio(_ frame: Frame) throws {
                if let (samples, offset) = try cut.take(frame) { try sound.add(samples, at: offset) }
            }

            while cursor < stop || !cut.isDone {
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
                        packet.duration = p.duration
                        try output.write(packet, stream: videoIndex)
                        next += 1
                        try reporter.report(.rendering, Double(p.pts) * secondsPerTick / max(total, 0.001))
                    }
                    cursor += 1
                } else if let audioDecoder, packet.streamIndex == audio?.index, !cut.isDone {
                    do { try audioDecoder.decode(packet, into: frame, takeAudio) } catch {}  // damaged audio: silence
                }
            }
            try sound.endSegment()
            outputStart = outputEnd
        }
        try sound.finish()
        try output.finish()
        return Renderer.Result(
            duration: total, width: analysis.info.displayWidth, height: analysis.info.displayHeight,
            silentAudio: audio == nil)
    }
}
