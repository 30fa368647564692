import Foundation
import Media
import MomentsModel
import MomentsSupport

/// Runs the single streaming analysis pass over a file.
enum Analyzer {
    static func run(path: String, limits: MediaLimits, scanning: VideoScanner.Settings = .init(), reporter: ProgressReporter) throws -> Analysis {
        try reporter.report(.probing, 0)
        return try run(opened: MediaProbe.open(path, limits: limits), limits: limits, scanning: scanning, reporter: reporter)
    }

    /// The same pass over bytes read through `source` (in memory when fuzzing, storage ranges).
    static func run(
        source: any RandomAccessInput, name: String, limits: MediaLimits, scanning: VideoScanner.Settings = .init(),
        reporter: ProgressReporter
    ) throws -> Analysis {
        try reporter.report(.probing, 0)
        return try run(opened: MediaProbe.open(source, name: name, limits: limits), limits: limits, scanning: scanning, reporter: reporter)
    }

    private static func run(
        opened: (InputFile, MediaInfo, video: MediaStream, audio: MediaStream?), limits: MediaLimits,
        scanning: VideoScanner.Settings, reporter: ProgressReporter
    ) throws -> Analysis {
        let (input, probed, videoStream, audioStream) = opened
        var info = probed
        let video: VideoScanner
        do {
            video = try VideoScanner(stream: videoStream, info: info, lean: limits.decodesLean(info), settings: scanning)
        } catch is Decoder.NoDecoder {
            throw MomentsError(
                .unsupportedCodec, "This video's codec (\(info.videoCodec)) cannot be decoded. Export it as H.264 or HEVC and try again.")
        } catch {
            throw MomentsError(
                .unsupportedCodec, "This video's codec (\(info.videoCodec)) could not be opened. Export it as H.264 or HEVC and try again.")
        }
        // A soundtrack we cannot decode is treated as none rather than failing the video.
        let audio = audioStream.flatMap { try? AudioScanner(stream: $0) }
        if audio == nil { info.audioCodec = nil; info.audioSampleRate = nil; info.audioChannels = nil; info.hasAudio = false }
        input.discardAll(except: Set([videoStream.index] + (audio.map { [$0.stream.index] } ?? [])))
        try reporter.report(.analyzing, 0)

        let packet = Packet()
        var damagedTail = false
        var firstTime: Double?
        let expected = info.duration
        var done = 0.0
        video.tick = { try reporter.report(.analyzing, done) }
        while true {
            let more: Bool
            do {
                more = try input.read(into: packet)
            } catch {
                // A read error mid-file (truncated or damaged): keep what was read.
                damagedTail = true
                video.markDamaged()
                break
            }
            guard more else { break }
            if packet.streamIndex == videoStream.index {
                // A container that understates its duration is stopped here, not after a full scan.
                if let t = packet.pts ?? packet.dts {
                    let seconds = videoStream.seconds(t)
                    firstTime = min(firstTime ?? seconds, seconds)
                    if let firstTime, seconds - firstTime > limits.maximumDuration {
                        try MediaProbe.checkDuration(seconds - firstTime, limits: limits)
                    }
                }
                try video.feed(packet)
                if expected > 0, let t = packet.pts ?? packet.dts {
                    done = videoStream.seconds(t) / expected
                    try reporter.report(.analyzing, done)
                }
            } else if let audio, packet.streamIndex == audio.stream.index {
                do { try audio.feed(packet) } catch {}  // an undecodable audio packet is skipped
            }
            if expected <= 0 { try reporter.report(.analyzing, 0) }
        }
        try video.finish()
        try? audio?.finish()

        guard video.decodedFrames > 0, let first = video.frameTimes.first, let last = video.frameTimes.last else {
            throw MomentsError(.corruptMedia, "No picture in this file could be decoded; it looks damaged. Export the video again and retry.")
        }
        let frameInterval =
            info.frameRate > 0 ? 1 / info.frameRate : (video.frameTimes.count > 1 ? (last - first) / Double(video.frameTimes.count - 1) : 1.0 / 30)
        let measured = last - first + frameInterval
        // Containers can claim more than is really there (truncated uploads): trust the frames.
        info.duration = damagedTail || probed.duration <= 0 ? measured : min(probed.duration, measured)
        if info.frameRate <= 0 { info.frameRate = 1 / frameInterval }
        try MediaProbe.checkDuration(info.duration, limits: limits)
        try reporter.report(.analyzing, 1)

        // Pictures the container places past its own end (a damaged timestamp far out) are not
        // part of the video: a segment snapped to one would run to it, and render nothing for as long.
        let frameTimes = video.frameTimes.map { $0 - first }.filter { $0 < info.duration }
        var analysis = FeatureTimeline.build(info: info, origin: first, frameTimes: frameTimes, video: video, audio: audio)
        if case .failure(let reason) = scanning.faces { analysis.facesUnavailable = "faces were not looked for: \(reason.description)" }
        return analysis
    }
}
