import CFFmpeg
import MomentsSupport

/// Owns an opened input (`AVFormatContext`): probes the container and hands out its packets in file order.
public final class InputFile {
    package let pointer: UnsafeMutablePointer<AVFormatContext>
    public let path: String
    private let reader: InputReader?

    /// The demuxers an upload may be read with: MOV/MP4/3GP, Matroska/WebM, AVI and MPEG-TS. The
    /// rest stay shut, above all the playlists (HLS, concat) that open other files by name.
    public static let uploadDemuxers = ["mov", "matroska", "avi", "mpegts"]

    /// Opens and probes the local file `path`, with one of `demuxers` (nil: any FFmpeg has). Only
    /// the `file` protocol is open, so nothing in a file can make FFmpeg reach another address.
    /// Throws the FFmpeg error of whichever step failed (`EINVAL` for a format not allowed).
    public init(path: String, demuxers: [String]? = InputFile.uploadDemuxers) throws(FFmpegError) {
        self.path = path
        reader = nil
        pointer = try Self.open(path, io: nil, demuxers: demuxers)
        // From here on `deinit` closes the context, including when stream info fails.
        try check(avformat_find_stream_info(pointer, nil), "avformat_find_stream_info")
    }

    /// Opens and probes bytes that are not a local file (an object in storage read by ranges, a
    /// buffer in memory), through FFmpeg's custom I/O: no protocol is opened at all. `name` only
    /// labels the input. A failure of `source` fails the read with `EIO` (the source knows why).
    public init(reading source: any RandomAccessInput, name: String, demuxers: [String]? = InputFile.uploadDemuxers) throws(FFmpegError) {
        path = name
        let reader = InputReader(source)
        self.reader = reader
        guard let io = reader.makeContext() else { throw FFmpegError(moments_averror_enomem(), "avio_alloc_context") }
        do {
            pointer = try Self.open(name, io: io, demuxers: demuxers)
        } catch {
            InputReader.free(io)
            throw error
        }
        try check(avformat_find_stream_info(pointer, nil), "avformat_find_stream_info")
    }

    private static func open(_ path: String, io: UnsafeMutablePointer<AVIOContext>?, demuxers: [String]?) throws(FFmpegError) -> UnsafeMutablePointer<
        AVFormatContext
    > {
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        if let io {
            guard let allocated = avformat_alloc_context() else { throw FFmpegError(moments_averror_enomem(), "avformat_alloc_context") }
            allocated.pointee.pb = io
            allocated.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            context = allocated
        }
        var options: OpaquePointer? = nil
        av_dict_set(&options, "protocol_whitelist", io == nil ? "file" : "", 0)
        if let demuxers { av_dict_set(&options, "format_whitelist", demuxers.joined(separator: ","), 0) }
        defer { av_dict_free(&options) }
        // On failure FFmpeg frees the context (ours too) but never a custom `pb`.
        try check(avformat_open_input(&context, path, nil, &options), "avformat_open_input")
        guard let opened = context else { throw FFmpegError(moments_averror_enomem(), "avformat_open_input") }
        return opened
    }

    deinit {
        var p: UnsafeMutablePointer<AVFormatContext>? = pointer
        let io = reader != nil ? pointer.pointee.pb : nil
        avformat_close_input(&p)
        if let io { InputReader.free(io) }
    }

    public var formatName: String { String(cString: pointer.pointee.iformat.pointee.name) }

    /// The container's metadata entry `key` (e.g. `timecode`), if any.
    public func metadata(_ key: String) -> String? {
        av_dict_get(pointer.pointee.metadata, key, nil, 0).flatMap { $0.pointee.value.map { String(cString: $0) } }
    }

    /// How sure FFmpeg's format probe was (0–100). At or below `InputFile.weakProbeScore` the
    /// format was guessed from a few bytes that happened to look right (FFmpeg's CLI warns
    /// "misdetection possible" there).
    public var probeScore: Int { Int(pointer.pointee.probe_score) }

    /// `AVPROBE_SCORE_RETRY` (`AVPROBE_SCORE_MAX / 4`), which Swift does not import.
    public static let weakProbeScore = 25

    /// Container duration in seconds, if the container states one.
    public var duration: Double? {
        let d = pointer.pointee.duration
        return d == moments_nopts() || d <= 0 ? nil : Double(d) / Double(AV_TIME_BASE)
    }

    public var streamCount: Int { Int(pointer.pointee.nb_streams) }

    public func stream(_ index: Int) -> MediaStream { MediaStream(file: self, pointer: pointer.pointee.streams[index]!) }

    public var streams: [MediaStream] { (0..<streamCount).map(stream) }

    /// The stream FFmpeg would pick for `type` (preferring the default and best-rated one), if any.
    public func bestStream(_ type: MediaType) -> MediaStream? {
        let index = av_find_best_stream(pointer, type.av, -1, -1, nil, 0)
        return index < 0 ? nil : stream(Int(index))
    }

    /// Reads the next packet into `packet`. Returns false at the end of the file.
    public func read(into packet: Packet) throws(FFmpegError) -> Bool {
        packet.unref()
        let result = av_read_frame(pointer, packet.pointer)
        if result == moments_averror_eof() { return false }
        try check(result, "av_read_frame")
        return true
    }

    /// Seeks so that the next packets of `stream` start at the keyframe at or before `seconds`.
    public func seek(stream: MediaStream, to seconds: Double) throws(FFmpegError) {
        let target = stream.ticks(seconds)
        try check(av_seek_frame(pointer, Int32(stream.index), target, AVSEEK_FLAG_BACKWARD), "av_seek_frame")
    }

    /// Seeks so that the next packet of `stream` is the one whose decode timestamp is `dts` (MP4/MOV
    /// index every sample, so this lands on it exactly, keyframe or not). Other streams are moved
    /// to the same time.
    public func seek(stream: MediaStream, toDecodeTimestamp dts: Int64) throws(FFmpegError) {
        try check(av_seek_frame(pointer, Int32(stream.index), dts, AVSEEK_FLAG_BACKWARD | AVSEEK_FLAG_ANY), "av_seek_frame")
    }

    /// Asks only for the listed streams' packets; the demuxer skips the others.
    public func discardAll(except keep: Set<Int>) {
        for stream in streams {
            stream.pointer.pointee.discard = keep.contains(stream.index) ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }
}

/// A view of one `AVStream` of an `InputFile` (valid as long as the file is open).
public struct MediaStream {
    /// The stream lives inside its file's format context: holding the file keeps it alive.
    let file: InputFile
    package let pointer: UnsafeMutablePointer<AVStream>

    public var index: Int { Int(pointer.pointee.index) }

    /// The stream's metadata entry `key` (e.g. `timecode`, `language`), if any.
    public func metadata(_ key: String) -> String? {
        av_dict_get(pointer.pointee.metadata, key, nil, 0).flatMap { $0.pointee.value.map { String(cString: $0) } }
    }
    package var parameters: UnsafeMutablePointer<AVCodecParameters> { pointer.pointee.codecpar }
    public var mediaType: MediaType { MediaType(parameters.pointee.codec_type) }
    package var codecID: AVCodecID { parameters.pointee.codec_id }
    public var codecName: String { String(cString: avcodec_get_name(codecID)) }
    /// True when this FFmpeg build can decode the stream.
    public var hasDecoder: Bool { codecID != AV_CODEC_ID_NONE && avcodec_find_decoder(codecID) != nil }
    public var timeBase: Rational { Rational(pointer.pointee.time_base) }
    public var width: Int { Int(parameters.pointee.width) }
    public var height: Int { Int(parameters.pointee.height) }
    public var sampleRate: Int { Int(parameters.pointee.sample_rate) }
    public var channels: Int { Int(parameters.pointee.ch_layout.nb_channels) }
    public var bitsPerRawSample: Int { Int(parameters.pointee.bits_per_raw_sample) }
    /// How many pictures the decoder holds back to reorder them (0: presented in decode order).
    public var reorderDepth: Int { Int(parameters.pointee.video_delay) }
    /// The decoded pictures' pixel format, when the stream is video and says.
    public var pixelFormat: PixelFormat? {
        guard mediaType == .video, parameters.pointee.format >= 0 else { return nil }
        return PixelFormat(AVPixelFormat(parameters.pointee.format))
    }
    /// The NAL layout of an H.264/HEVC stream stored as in MP4 (nil for any other codec or layout).
    public var bitstream: Bitstream? { Bitstream(parameters: parameters) }
    /// What the encoder wrote of its own settings: with its first picture (`packet`, the stream's
    /// first: x264) or in the stream's headers (x265, in its `hvcC` record); nil where neither holds them.
    public func encoderOptions(firstPacket packet: Packet) -> EncoderOptions? {
        bitstream?.encoderOptions(packet.bytes) ?? headerEncoderOptions
    }

    private var headerEncoderOptions: EncoderOptions? {
        let p = parameters.pointee
        guard p.codec_id == AV_CODEC_ID_HEVC, let extradata = p.extradata, p.extradata_size > 0 else { return nil }
        return Bitstream.encoderOptions(inHEVCRecord: UnsafeBufferPointer(start: extradata, count: Int(p.extradata_size)))
    }
    /// The codec profile's name (`High`, `Main 10`), or nil when the stream does not say.
    public var profileName: String? {
        let profile = parameters.pointee.profile
        return profile < 0 ? nil : avcodec_profile_name(codecID, profile).map { String(cString: $0) }
    }
    /// The colour description the stream states (parts it leaves out are `.unspecified`).
    public var color: ColorDescription {
        let p = parameters.pointee
        return ColorDescription(
            primaries: .init(p.color_primaries), transfer: .init(p.color_trc),
            space: .init(p.color_space), range: .init(p.color_range))
    }
    public var isAttachedPicture: Bool { pointer.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0 }

    /// Sample aspect ratio (1 when unknown).
    public var sampleAspectRatio: Double {
        let sar = pointer.pointee.sample_aspect_ratio.num != 0 ? pointer.pointee.sample_aspect_ratio : parameters.pointee.sample_aspect_ratio
        return sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : 1
    }

    /// Average frame rate as stated or measured by the demuxer (0 when unknown).
    public var averageFrameRate: Double {
        let average = Rational(pointer.pointee.avg_frame_rate)
        if average.isPositive { return average.value }
        let guessed = Rational(pointer.pointee.r_frame_rate)
        return guessed.isPositive ? guessed.value : 0
    }

    /// Stream duration in seconds, if known.
    public var duration: Double? {
        let d = pointer.pointee.duration
        return d == moments_nopts() || d <= 0 ? nil : seconds(d)
    }

    /// Clockwise rotation in degrees (0, 90, 180, 270) that makes the picture upright, from the display matrix.
    public var rotation: Int {
        var size: Int = 0
        guard let data = av_stream_get_side_data(pointer, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let angle = av_display_rotation_get(UnsafeRawPointer(data).assumingMemoryBound(to: Int32.self))
        guard angle.isFinite else { return 0 }
        let clockwise = -Int(angle.rounded())
        let normalized = ((clockwise % 360) + 360) % 360
        return (normalized + 45) / 90 * 90 % 360
    }

    public func seconds(_ ticks: Int64) -> Double {
        Double(ticks) * Double(timeBase.numerator) / Double(timeBase.denominator)
    }

    /// The tick at or before `seconds`; a time a rounding error short of a tick (a timestamp turned
    /// into seconds and back) is that tick.
    public func ticks(_ seconds: Double) -> Int64 {
        Int64(saturating: (seconds * Double(timeBase.denominator) / Double(timeBase.numerator) + 1e-6).rounded(.down))
    }
}
