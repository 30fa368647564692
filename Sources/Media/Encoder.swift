import CFFmpeg

/// Owns an encoding `AVCodecContext`.
public final class Encoder {
    package let context: UnsafeMutablePointer<AVCodecContext>

    public struct NoEncoder: Error, Sendable { public let name: String }

    public struct Video: Sendable {
        public var codec: String
        public var width: Int
        public var height: Int
        public var pixelFormat: PixelFormat
        public var timeBase: Rational
        public var frameRate: Rational
        public var bitRate: Int = 0
        public var gopSize: Int = 0
        public var maxBFrames: Int = -1
        public var threads: Int = 0
        /// Shape of one stored pixel (anamorphic sources have non-square pixels).
        public var sampleAspectRatio = Rational(1, 1)
        /// Codec private options, e.g. `["preset": "veryfast", "crf": "21"]`.
        public var options: [String: String] = [:]
        /// Colour description written into the stream (and the container's `colr`).
        public var color = ColorDescription.unspecified

        public init(
            codec: String, width: Int, height: Int, pixelFormat: PixelFormat,
            timeBase: Rational, frameRate: Rational, options: [String: String] = [:]
        ) {
            self.codec = codec
            self.width = width
            self.height = height
            self.pixelFormat = pixelFormat
            self.timeBase = timeBase
            self.frameRate = frameRate
            self.options = options
        }
    }

    public struct Audio: Sendable {
        public var codec: String
        public var sampleRate: Int
        public var channels: Int
        public var sampleFormat: SampleFormat
        public var bitRate: Int

        public init(codec: String, sampleRate: Int, channels: Int, sampleFormat: SampleFormat, bitRate: Int) {
            self.codec = codec
            self.sampleRate = sampleRate
            self.channels = channels
            self.sampleFormat = sampleFormat
            self.bitRate = bitRate
        }
    }

    /// `globalHeader` must be true when the muxer wants extradata out of band (MP4, MKV).
    public init(video settings: Video, globalHeader: Bool) throws {
        guard let codec = avcodec_find_encoder_by_name(settings.codec) else { throw NoEncoder(name: settings.codec) }
        guard let context = avcodec_alloc_context3(codec) else { throw FFmpegError(moments_averror_enomem(), "avcodec_alloc_context3") }
        self.context = context
        context.pointee.width = Int32(settings.width)
        context.pointee.height = Int32(settings.height)
        context.pointee.pix_fmt = settings.pixelFormat.av
        context.pointee.time_base = settings.timeBase.av
        context.pointee.framerate = settings.frameRate.av
        context.pointee.sample_aspect_ratio = settings.sampleAspectRatio.av
        context.pointee.thread_count = Int32(settings.threads)
        if settings.bitRate > 0 { context.pointee.bit_rate = Int64(settings.bitRate) }
        if settings.gopSize > 0 { context.pointee.gop_size = Int32(settings.gopSize) }
        if settings.maxBFrames >= 0 { context.pointee.max_b_frames = Int32(settings.maxBFrames) }
        context.pointee.color_primaries = settings.color.primaries.av
        context.pointee.color_trc = settings.color.transfer.av
        context.pointee.colorspace = settings.color.space.av
        context.pointee.color_range = settings.color.range.av
        if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try Self.open(context, codec, settings.options)
    }

    public init(audio settings: Audio, globalHeader: Bool) throws {
        guard let codec = avcodec_find_encoder_by_name(settings.codec) else { throw NoEncoder(name: settings.codec) }
        guard let context = avcodec_alloc_context3(codec) else { throw FFmpegError(moments_averror_enomem(), "avcodec_alloc_context3") }
        self.context = context
        context.pointee.sample_rate = Int32(settings.sampleRate)
        context.pointee.sample_fmt = settings.sampleFormat.av
        av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
        context.pointee.bit_rate = Int64(settings.bitRate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
        if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try Self.open(context, codec, [:])
    }

    private static func open(_ context: UnsafeMutablePointer<AVCodecContext>, _ codec: UnsafePointer<AVCodec>, _ options: [String: String])
        throws(FFmpegError)
    {
        var dictionary: OpaquePointer? = nil
        for (key, value) in options.sorted(by: { $0.key < $1.key }) { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(avcodec_open2(context, codec, &dictionary), "avcodec_open2")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&p)
    }

    public var timeBase: Rational { Rational(context.pointee.time_base) }
    /// Samples per audio frame the encoder expects (0 for video or variable).
    public var frameSize: Int { Int(context.pointee.frame_size) }
    public var sampleRate: Int { Int(context.pointee.sample_rate) }
    public var sampleFormat: SampleFormat { SampleFormat(context.pointee.sample_fmt) }

    /// Encodes `frame` (nil drains) and hands each finished packet to `body`.
    public func encode(_ frame: Frame?, _ body: (Packet) throws -> Void) throws {
        try check(avcodec_send_frame(context, frame?.pointer), "avcodec_send_frame")
        let packet = Packet()
        while true {
            let result = avcodec_receive_packet(context, packet.pointer)
            if result == moments_averror_eagain() || result == moments_averror_eof() { return }
            try check(result, "avcodec_receive_packet")
            try body(packet)
            packet.unref()
        }
    }
}
