import CFFmpeg

/// Owns a decoding `AVCodecContext` for one stream.
public final class Decoder {
    package let context: UnsafeMutablePointer<AVCodecContext>
    public let timeBase: Rational

    public struct Options: Sendable {
        /// Decoder threads (0 lets FFmpeg choose).
        public var threads: Int = 1
        /// Allow frame threading (higher throughput, adds latency; poor for sparse decoding).
        public var frameThreads: Bool = false
        /// Attach motion vectors to decoded frames.
        public var exportMotionVectors: Bool = false
        /// Skip the deblocking filter: faster, slightly blockier pictures (fine for analysis, not for output).
        public var skipLoopFilter: Bool = false
        /// The largest picture (width × height) the decoder will allocate; a stream that declares or
        /// switches to a larger one fails to decode instead of taking the memory (0: FFmpeg's limit).
        public var maximumPixels: Int = 0
        /// Output every picture decoded since a keyframe, also when drained early. H.264's decoder
        /// holds back the pictures that follow a recovery-point I picture (an open GOP's keyframe,
        /// which is not an IDR) until that picture itself has been output, and a drain drops those
        /// still held back: a run of the keyframe and its next picture would return the keyframe
        /// alone. Pictures shown after such a keyframe are whole by the standard's guarantee; only
        /// for runs that never take the leading pictures (shown before the keyframe).
        public var showsPicturesBeforeRecovery: Bool = false

        public init(threads: Int = 1, frameThreads: Bool = false, exportMotionVectors: Bool = false, skipLoopFilter: Bool = false) {
            self.threads = threads
            self.frameThreads = frameThreads
            self.exportMotionVectors = exportMotionVectors
            self.skipLoopFilter = skipLoopFilter
        }
    }

    /// Thrown when FFmpeg has no decoder for the stream's codec.
    public struct NoDecoder: Error, Sendable { public let codecName: String }

    public init(stream: MediaStream, options: Options = Options()) throws {
        guard let codec = avcodec_find_decoder(stream.codecID) else { throw NoDecoder(codecName: stream.codecName) }
        guard let context = avcodec_alloc_context3(codec) else { throw FFmpegError(moments_averror_enomem(), "avcodec_alloc_context3") }
        self.context = context
        self.timeBase = stream.timeBase
        try check(avcodec_parameters_to_context(context, stream.parameters), "avcodec_parameters_to_context")
        context.pointee.pkt_timebase = stream.timeBase.av
        context.pointee.thread_count = Int32(options.threads)
        context.pointee.thread_type = options.frameThreads ? FF_THREAD_FRAME | FF_THREAD_SLICE : FF_THREAD_SLICE
        if options.exportMotionVectors {
            context.pointee.export_side_data |= Int32(AV_CODEC_EXPORT_DATA_MVS)
            av_opt_set(context.pointee.priv_data, "flags2", "+export_mvs", 0)
            context.pointee.flags2 |= AV_CODEC_FLAG2_EXPORT_MVS
        }
        if options.skipLoopFilter { context.pointee.skip_loop_filter = AVDISCARD_ALL }
        if options.maximumPixels > 0 { context.pointee.max_pixels = Int64(options.maximumPixels) }
        if options.showsPicturesBeforeRecovery { context.pointee.flags2 |= AV_CODEC_FLAG2_SHOW_ALL }
        try check(avcodec_open2(context, codec, nil), "avcodec_open2")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&p)
    }

    /// Attach motion vectors to the frames decoded from now on.
    public var exportsMotionVectors: Bool {
        get { context.pointee.export_side_data & Int32(AV_CODEC_EXPORT_DATA_MVS) != 0 }
        set {
            if newValue {
                context.pointee.export_side_data |= Int32(AV_CODEC_EXPORT_DATA_MVS)
                context.pointee.flags2 |= AV_CODEC_FLAG2_EXPORT_MVS
            } else {
                context.pointee.export_side_data &= ~Int32(AV_CODEC_EXPORT_DATA_MVS)
                context.pointee.flags2 &= ~AV_CODEC_FLAG2_EXPORT_MVS
            }
        }
    }

    /// Skip pictures no other picture refers to (most B pictures), for a quick pass over the
    /// anchors; may be switched between packets.
    public var skipsNonReferencePictures: Bool {
        get { context.pointee.skip_frame == AVDISCARD_NONREF }
        set { context.pointee.skip_frame = newValue ? AVDISCARD_NONREF : AVDISCARD_DEFAULT }
    }

    /// Forgets all buffered state so decoding can restart at a keyframe (after a seek or a drain).
    public func flush() { avcodec_flush_buffers(context) }

    /// Decodes `packet` (or drains when nil) and hands every frame that comes out to `body`.
    /// Data the decoder rejects as invalid is skipped, not thrown: damaged media decodes on.
    public func decode(_ packet: Packet?, into frame: Frame, _ body: (Frame) throws -> Void) throws {
        while true {
            let sent = avcodec_send_packet(context, packet?.pointer)
            if sent < 0 && sent != moments_averror_eagain() && sent != moments_averror_eof() && sent != moments_averror_invaliddata() {
                throw FFmpegError(sent, "avcodec_send_packet")
            }
            while true {
                frame.unref()
                let received = avcodec_receive_frame(context, frame.pointer)
                if received == moments_averror_eagain() || received == moments_averror_eof() { break }
                if received == moments_averror_invaliddata() { continue }
                if received < 0 { throw FFmpegError(received, "avcodec_receive_frame") }
                try body(frame)
            }
            if sent != moments_averror_eagain() { return }
        }
    }
}
