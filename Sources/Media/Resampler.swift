import CFFmpeg

/// Owns a `SwrContext`: converts decoded audio to one interleaved or planar format, rate and channel count.
public final class Resampler {
    private var context: OpaquePointer?
    public let sampleRate: Int
    public let channels: Int
    public let format: SampleFormat
    private var sourceShape: (rate: Int32, channels: Int32, format: Int32) = (0, 0, -1)

    public init(sampleRate: Int, channels: Int, format: SampleFormat) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.format = format
    }

    deinit { swr_free(&context) }

    private func prepare(for frame: Frame) throws(FFmpegError) {
        let src = frame.pointer.pointee
        let shape = (src.sample_rate, src.ch_layout.nb_channels, src.format)
        if context != nil && shape == sourceShape { return }
        swr_free(&context)
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(channels))
        var inLayout = AVChannelLayout()
        if src.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || src.ch_layout.nb_channels <= 0 {
            av_channel_layout_default(&inLayout, max(1, src.ch_layout.nb_channels))
        } else {
            var layout = src.ch_layout
            av_channel_layout_copy(&inLayout, &layout)
        }
        defer { av_channel_layout_uninit(&inLayout); av_channel_layout_uninit(&outLayout) }
        try check(
            swr_alloc_set_opts2(
                &context, &outLayout, format.av, Int32(sampleRate),
                &inLayout, AVSampleFormat(src.format), src.sample_rate, 0, nil), "swr_alloc_set_opts2")
        try check(swr_init(context), "swr_init")
        sourceShape = shape
    }

    /// Converts `frame` and returns the converted samples (as many as the resampler can emit now).
    public func convert(_ frame: Frame) throws(FFmpegError) -> Frame {
        try prepare(for: frame)
        let inCount = Int32(frame.sampleCount)
        let capacity = Int(swr_get_out_samples(context, inCount)) + 32
        let out = try Frame.audio(samples: max(capacity, 1), sampleRate: sampleRate, channels: channels, format: format)
        var (outData, _) = planes(of: out.pointer)
        var inData = planes(of: frame.pointer).0.map { UnsafePointer($0) }
        let produced = swr_convert(context, &outData, Int32(capacity), &inData, inCount)
        try check(produced, "swr_convert")
        out.pointer.pointee.nb_samples = produced
        return out
    }
}
