import Foundation
import MomentsModel
import MomentsSupport

/// Opens inputs and turns every way they can be unusable into a `MomentsError`.
public enum MediaProbe {
    /// Reads the file's container and streams and checks them against `limits` without decoding
    /// anything: what the API does to an upload before it accepts it.
    public static func probe(_ path: String, limits: MediaLimits = MediaLimits()) throws(MomentsError) -> MediaInfo {
        try open(path, limits: limits).1
    }

    /// Opens `path`, picks the streams and checks them against `limits`.
    public static func open(_ path: String, limits: MediaLimits) throws(MomentsError) -> (
        InputFile, MediaInfo, video: MediaStream, audio: MediaStream?
    ) {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw MomentsError(
                .ioError, "The file \(URL(fileURLWithPath: path).lastPathComponent) could not be read: it does not exist or is not accessible.")
        }
        if (attributes[.type] as? FileAttributeType) == .typeDirectory {
            throw MomentsError(.ioError, "\(URL(fileURLWithPath: path).lastPathComponent) is a folder, not a video file.")
        }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        if size == 0 { throw MomentsError(.notAVideo, "The file is empty (0 bytes). Upload the video again.") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw MomentsError(.ioError, "The file \(URL(fileURLWithPath: path).lastPathComponent) is not readable.")
        }

        let input: InputFile
        do {
            input = try InputFile(path: path)
        } catch {
            throw failure(error, head: head(path))
        }
        return try inspect(input, size: size, limits: limits)
    }

    /// Probes bytes that are not a local file (an object in storage read by ranges, a buffer in
    /// memory) as `probe(_:limits:)` probes a file. A failing source ends in `ioError`.
    public static func probe(_ source: any RandomAccessInput, name: String, limits: MediaLimits = MediaLimits()) throws(MomentsError) -> MediaInfo {
        try open(source, name: name, limits: limits).1
    }

    /// Opens `source` through custom I/O, picks the streams and checks them against `limits`.
    public static func open(_ source: any RandomAccessInput, name: String, limits: MediaLimits) throws(MomentsError) -> (
        InputFile, MediaInfo, video: MediaStream, audio: MediaStream?
    ) {
        if source.size == 0 { throw MomentsError(.notAVideo, "The file is empty (0 bytes). Upload the video again.") }
        let input: InputFile
        do {
            input = try InputFile(reading: source, name: name)
        } catch {
            var head = [UInt8](repeating: 0, count: Int(min(source.size, 380)))
            let count = (try? head.withUnsafeMutableBytes { try source.read(at: 0, into: $0) }) ?? 0
            throw failure(error, head: Array(head.prefix(count)))
        }
        return try inspect(input, size: source.size, limits: limits)
    }

    /// The error for an input FFmpeg could not open: unreadable, damaged (it starts like a video
    /// container) or not a video at all.
    static func failure(_ error: FFmpegError, head: [UInt8]) -> MomentsError {
        if error.code == -ENOENT || error.code == -EACCES || error.code == -EIO {
            return MomentsError(.ioError, "The file could not be read (\(error.reason)).")
        }
        if looksLikeVideoContainer(head) {
            return MomentsError(
                .corruptMedia,
                "This video file is damaged or incomplete (it may have been cut off while uploading or copying). Export it again and retry.")
        }
        return MomentsError(.notAVideo, notAVideoSentence)
    }

    /// Picks the streams of an opened input and checks them against `limits`.
    static func inspect(_ input: InputFile, size: Int64, limits: MediaLimits) throws(MomentsError) -> (
        InputFile, MediaInfo, video: MediaStream, audio: MediaStream?
    ) {
        // Demuxers that claim any bytes (raw text, images) are not videos for us.
        let rejectedFormats: Set<String> = [
            "tty", "image2", "image2pipe", "txt", "srt", "ass", "webvtt", "lrc", "microdvd", "subviewer", "mpl2", "jacosub", "sami", "vplayer", "pjs",
            "realtext", "stl", "aqtitle",
        ]
        if rejectedFormats.contains(input.formatName) { throw MomentsError(.notAVideo, notAVideoSentence) }

        let videoStreams = input.streams.filter { $0.mediaType == .video && !$0.isAttachedPicture }
        let audio = input.bestStream(.audio)
        guard
            let video = input.bestStream(.video).flatMap({ best in videoStreams.contains { $0.index == best.index } ? best : nil })
                ?? videoStreams.first
        else {
            if audio != nil {
                throw MomentsError(.noVideoStream, "This file has sound but no picture. Choose a video, not an audio recording.")
            }
            throw MomentsError(.noVideoStream, "This file has no video in it. Choose a video from your library.")
        }
        if !video.hasDecoder {
            throw MomentsError(
                .unsupportedCodec,
                "This video is encoded as \(video.codecName), which Moments cannot decode. Export it as H.264 or HEVC (MP4 or MOV) and try again.")
        }
        if video.width <= 0 || video.height <= 0 {
            throw MomentsError(.corruptMedia, "The video's picture size could not be read; the file looks damaged. Export it again and retry.")
        }
        let long = max(video.width, video.height), short = min(video.width, video.height)
        if long > limits.maximumLongSide || short > limits.maximumShortSide {
            throw MomentsError(
                .resolutionTooLarge,
                "The video is \(video.width)×\(video.height); Moments accepts up to 8K (7680×4320). Export it at a lower resolution.")
        }
        let usableAudio = audio.flatMap { $0.hasDecoder ? $0 : nil }
        let duration = input.duration ?? video.duration ?? 0
        // Random bytes now and then pass for a raw H.263 or DV stream, guessed at FFmpeg's weakest
        // score and with no length; a real video names its container or states its length.
        if input.probeScore <= InputFile.weakProbeScore && duration <= 0 {
            throw MomentsError(.notAVideo, notAVideoSentence)
        }
        var info = MediaInfo(container: input.formatName, fileSize: size, duration: duration, video: video, audio: usableAudio)
        if info.frameRate <= 0 || !info.frameRate.isFinite { info.frameRate = 0 }
        // A camera's start timecode (QuickTime `tmcd`, MP4/MXF tags): on the video, a timecode track, or the file.
        info.startTimecode = ([video.metadata("timecode")] + input.streams.map { $0.metadata("timecode") } + [input.metadata("timecode")])
            .lazy.compactMap { $0 }.first { MediaInfo.isTimecode($0) }
        try checkDuration(info.duration, limits: limits, known: duration > 0)
        return (input, info, video, usableAudio)
    }

    /// Checks a duration against the limits (`known` false skips it: analysis measures it then).
    public static func checkDuration(_ duration: Double, limits: MediaLimits, known: Bool = true) throws(MomentsError) {
        guard known else { return }
        if duration < limits.minimumDuration {
            throw MomentsError(
                .tooShort, String(format: "The video is %.1f s long; a highlight needs at least %.0f s of footage.", duration, limits.minimumDuration)
            )
        }
        if duration > limits.maximumDuration {
            throw MomentsError(
                .tooLong,
                String(
                    format: "The video is %@ long; Moments accepts videos up to %@. Trim it and try again.", clock(duration),
                    clock(limits.maximumDuration)))
        }
    }

    /// The file's first bytes (enough for `looksLikeVideoContainer`).
    static func head(_ path: String) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        return [UInt8](handle.readData(ofLength: 380))
    }

    /// Whether the bytes start like a video container (so a failure to open it means damage, not a wrong file).
    static func looksLikeVideoContainer(_ head: [UInt8]) -> Bool {
        guard head.count >= 12 else { return false }
        let box = String(decoding: head[4..<8], as: UTF8.self)
        if ["ftyp", "moov", "mdat", "wide", "free", "skip"].contains(box) { return true }  // MP4, MOV, 3GP
        if head[0..<4].elementsEqual([0x1A, 0x45, 0xDF, 0xA3]) { return true }  // Matroska, WebM
        if head[0..<4].elementsEqual("RIFF".utf8) && head[8..<12].elementsEqual("AVI ".utf8) { return true }
        if head.count >= 377 && head[0] == 0x47 && head[188] == 0x47 && head[376] == 0x47 { return true }  // MPEG-TS
        return false
    }

    static let notAVideoSentence = "This file is not a video we can read. Try exporting it as MP4 or MOV."

    static func clock(_ seconds: Double) -> String {
        let s = Int(saturating: seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}
