import CFFmpeg
import Foundation
import Media
import MomentsModel

/// What the engine learned about an input before analysing it.
public struct MediaInfo: Sendable, Codable, Equatable {
    public var container: String
    public var fileSize: Int64
    /// Seconds, from the container or the streams (refined by analysis when both are missing).
    public var duration: Double
    public var videoCodec: String
    public var pixelFormat: String?
    public var bitDepth: Int
    /// Coded (stored) picture size.
    public var width: Int
    public var height: Int
    /// Size as displayed: sample aspect ratio and rotation applied.
    public var displayWidth: Int
    public var displayHeight: Int
    public var sampleAspectRatio: Double
    /// Clockwise degrees applied to show the picture upright.
    public var rotation: Int
    /// Average frame rate (frames per second); frame timing is always taken from timestamps.
    public var frameRate: Double
    /// The codec profile's name (`High`, `Main 10`, …), when the container says.
    public var videoProfile: String?
    /// Colour description of the picture as the stream tags it (`bt709`, `bt2020`, `arib-std-b67`, …).
    public var colorPrimaries: String?
    public var colorTransfer: String?
    public var colorSpace: String?
    public var colorRange: String?
    /// `hlg` or `pq` for high dynamic range pictures (from the transfer function), `sdr` otherwise.
    public var dynamicRange: String?
    public var audioCodec: String?
    public var audioSampleRate: Int?
    public var audioChannels: Int?
    public var hasAudio: Bool

    enum CodingKeys: String, CodingKey {
        case container, fileSize = "file_size", duration, videoCodec = "video_codec", pixelFormat = "pixel_format"
        case bitDepth = "bit_depth", width, height, displayWidth = "display_width", displayHeight = "display_height"
        case sampleAspectRatio = "sample_aspect_ratio", rotation, frameRate = "fps", audioCodec = "audio_codec"
        case audioSampleRate = "audio_sample_rate", audioChannels = "audio_channels", hasAudio = "has_audio"
        case videoProfile = "video_profile", colorPrimaries = "color_primaries", colorTransfer = "color_transfer"
        case colorSpace = "color_space", colorRange = "color_range", dynamicRange = "dynamic_range"
    }

    public var isHDR: Bool { dynamicRange == "hlg" || dynamicRange == "pq" }

    /// Seconds between frames at the average frame rate (1/30 when the rate is unknown).
    var nominalFrameInterval: Double { frameRate > 0 ? 1 / frameRate : 1.0 / 30 }

    /// Bytes of one decoded picture's luma plane (two a sample above 8 bits).
    var pictureBytes: Int { width * height * (bitDepth > 8 ? 2 : 1) }


    init(container: String, fileSize: Int64, duration: Double, video: MediaStream, audio: MediaStream?) {
        self.container = container
        self.fileSize = fileSize
        self.duration = duration
        videoCodec = video.codecName
        pixelFormat = video.pixelFormatName
        let descriptorDepth = video.pixelFormatName.flatMap { av_pix_fmt_desc_get(av_get_pix_fmt($0)) }.map { Int($0.pointee.comp.0.depth) }
        bitDepth = video.bitsPerRawSample > 0 ? video.bitsPerRawSample : (descriptorDepth ?? 8)
        width = video.width
        height = video.height
        sampleAspectRatio = video.sampleAspectRatio
        rotation = video.rotation
        let shownWidth = max(1, Int((Double(video.width) * video.sampleAspectRatio).rounded()))
        displayWidth = rotation % 180 == 0 ? shownWidth : video.height
        displayHeight = rotation % 180 == 0 ? video.height : shownWidth
        frameRate = video.averageFrameRate
        let p = video.parameters.pointee
        videoProfile = avcodec_profile_name(video.codecID, p.profile).map { String(cString: $0) }
        colorPrimaries = p.color_primaries == AVCOL_PRI_UNSPECIFIED ? nil : av_color_primaries_name(p.color_primaries).map { String(cString: $0) }
        colorTransfer = p.color_trc == AVCOL_TRC_UNSPECIFIED ? nil : av_color_transfer_name(p.color_trc).map { String(cString: $0) }
        colorSpace = p.color_space == AVCOL_SPC_UNSPECIFIED ? nil : av_color_space_name(p.color_space).map { String(cString: $0) }
        colorRange = p.color_range == AVCOL_RANGE_UNSPECIFIED ? nil : av_color_range_name(p.color_range).map { String(cString: $0) }
        dynamicRange = switch colorTransfer {
        case "arib-std-b67": "hlg"
        case "smpte2084": "pq"
        default: "sdr"
        }
        audioCodec = audio?.codecName
        audioSampleRate = audio?.sampleRate
        audioChannels = audio?.channels
        hasAudio = audio != nil
    }
}

/// Limits on what the engine accepts.
public struct MediaLimits: Sendable {
    public var minimumDuration: Double = 1
    public var maximumDuration: Double = 30 * 60
    /// 8K UHD: 7680 × 4320 (either orientation).
    public var maximumLongSide = 7680
    public var maximumShortSide = 4320

    public init(maximumDuration: Double = 30 * 60) { self.maximumDuration = maximumDuration }

    /// The largest picture any decoder may allocate.
    public var maximumPixels: Int { maximumLongSide * maximumShortSide }

    /// The largest decoded picture (bytes of luma) the engine keeps several of in flight. Above
    /// it the analysis runs one sample runner (its decoder working a picture's slices or wavefront
    /// rows on two threads) instead of two, which saves a decoder's pictures for 10-bit 1080p HDR;
    /// and pictures above 1080p are decoded on one thread without frame threading, so 4K and 8K
    /// sources keep as few as the stream needs.
    static let frameThreadingBytes = 1920 * 1088

    /// Above this many bytes of luma (beyond 4K: 5K, 6K, 8K) a decoded picture with its motion
    /// tables is 30–70 MB and a decoder holds as many as the stream's references and reordering
    /// need (five for B-pyramid H.264), so the analysis decodes one stream of pictures at a time
    /// (sample runs on the scanning thread, not beside the dense decoding) and frees each decoder's
    /// pictures once its GOP is done, and the render encodes on slice threads.
    public var leanDecodingBytes = 4096 * 2304

    func decodesLean(_ info: MediaInfo) -> Bool { info.pictureBytes > leanDecodingBytes }
}

/// Opens inputs and turns every way they can be unusable into a `MomentsError`.
enum MediaProbe {
    /// Opens `path`, picks the streams and checks them against `limits`.
    static func open(_ path: String, limits: MediaLimits) throws(MomentsError) -> (InputFile, MediaInfo, video: MediaStream, audio: MediaStream?) {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw MomentsError(.ioError, "The file \(URL(fileURLWithPath: path).lastPathComponent) could not be read: it does not exist or is not accessible.")
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
            if error.code == -ENOENT || error.code == -EACCES || error.code == -EIO {
                throw MomentsError(.ioError, "The file could not be read (\(error.reason)).")
            }
            if looksLikeVideoContainer(path) {
                throw MomentsError(.corruptMedia, "This video file is damaged or incomplete (it may have been cut off while uploading or copying). Export it again and retry.")
            }
            throw MomentsError(.notAVideo, notAVideoSentence)
        }
        // Demuxers that claim any bytes (raw text, images) are not videos for us.
        let rejectedFormats: Set<String> = ["tty", "image2", "image2pipe", "txt", "srt", "ass", "webvtt", "lrc", "microdvd", "subviewer", "mpl2", "jacosub", "sami", "vplayer", "pjs", "realtext", "stl", "aqtitle"]
        if rejectedFormats.contains(input.formatName) { throw MomentsError(.notAVideo, notAVideoSentence) }

        let videoStreams = input.streams.filter { $0.mediaType == AVMEDIA_TYPE_VIDEO && !$0.isAttachedPicture }
        let audio = input.bestStream(AVMEDIA_TYPE_AUDIO)
        guard let video = input.bestStream(AVMEDIA_TYPE_VIDEO).flatMap({ best in videoStreams.contains { $0.index == best.index } ? best : nil }) ?? videoStreams.first else {
            if audio != nil {
                throw MomentsError(.noVideoStream, "This file has sound but no picture. Choose a video, not an audio recording.")
            }
            throw MomentsError(.noVideoStream, "This file has no video in it. Choose a video from your library.")
        }
        if avcodec_find_decoder(video.codecID) == nil || video.codecID == AV_CODEC_ID_NONE {
            throw MomentsError(.unsupportedCodec, "This video is encoded as \(video.codecName), which Moments cannot decode. Export it as H.264 or HEVC (MP4 or MOV) and try again.")
        }
        if video.width <= 0 || video.height <= 0 {
            throw MomentsError(.corruptMedia, "The video's picture size could not be read; the file looks damaged. Export it again and retry.")
        }
        let long = max(video.width, video.height), short = min(video.width, video.height)
        if long > limits.maximumLongSide || short > limits.maximumShortSide {
            throw MomentsError(.resolutionTooLarge, "The video is \(video.width)×\(video.height); Moments accepts up to 8K (7680×4320). Export it at a lower resolution.")
        }
        let usableAudio = audio.flatMap { avcodec_find_decoder($0.codecID) != nil ? $0 : nil }
        let duration = input.duration ?? video.duration ?? 0
        // Random bytes now and then pass for a raw H.263 or DV stream, guessed at FFmpeg's weakest
        // score and with no length; a real video names its container or states its length.
        if input.probeScore <= InputFile.weakProbeScore && duration <= 0 {
            throw MomentsError(.notAVideo, notAVideoSentence)
        }
        var info = MediaInfo(container: input.formatName, fileSize: size, duration: duration, video: video, audio: usableAudio)
        if info.frameRate <= 0 || !info.frameRate.isFinite { info.frameRate = 0 }
        try checkDuration(info.duration, limits: limits, known: duration > 0)
        return (input, info, video, usableAudio)
    }

    /// Checks a duration against the limits (`known` false skips it: analysis measures it then).
    static func checkDuration(_ duration: Double, limits: MediaLimits, known: Bool = true) throws(MomentsError) {
        guard known else { return }
        if duration < limits.minimumDuration {
            throw MomentsError(.tooShort, String(format: "The video is %.1f s long; a highlight needs at least %.0f s of footage.", duration, limits.minimumDuration))
        }
        if duration > limits.maximumDuration {
            throw MomentsError(.tooLong, String(format: "The video is %@ long; Moments accepts videos up to %@. Trim it and try again.", clock(duration), clock(limits.maximumDuration)))
        }
    }

    /// Whether the file starts like a video container (so a failure to open it means damage, not a wrong file).
    static func looksLikeVideoContainer(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8](handle.readData(ofLength: 380))
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
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}

extension Decoder.Options {
    /// How to decode `info`'s video: `threads` with frame threading up to 1080p, one slice-threaded
    /// thread above it (each frame in flight of an 8K picture is 50–100 MB), and never a picture
    /// larger than the limits allow.
    static func video(for info: MediaInfo, threads: Int, analysis: Bool, limits: MediaLimits = MediaLimits()) -> Decoder.Options {
        let large = info.width * info.height > MediaLimits.frameThreadingBytes
        var options = Decoder.Options(threads: large ? 1 : threads, frameThreads: !large && threads > 1,
                                      exportMotionVectors: analysis, skipLoopFilter: analysis)
        options.maximumPixels = limits.maximumPixels
        return options
    }
}
