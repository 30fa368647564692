import CFFmpeg

/// Owns one `AVFrame`.
public final class Frame {
    package let pointer: UnsafeMutablePointer<AVFrame>

    public init() {
        guard let frame = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = frame
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    public func unref() { av_frame_unref(pointer) }

    /// A new frame referencing the same buffers (no copy of the pixels).
    public func clone() throws(FFmpegError) -> Frame {
        let copy = Frame()
        try check(av_frame_ref(copy.pointer, pointer), "av_frame_ref")
        return copy
    }

    /// A new frame referencing the part `x, y, width, height` of this picture (no copy of the
    /// pixels). Keep `x` and `y` even for 4:2:0 pictures, so the chroma planes line up.
    public func cropped(x: Int, y: Int, width: Int, height: Int) throws(FFmpegError) -> Frame {
        let copy = try clone()
        let full = (self.width, self.height)
        guard x >= 0, y >= 0, width > 0, height > 0, x + width <= full.0, y + height <= full.1 else {
            throw FFmpegError(moments_averror_invaliddata(), "crop outside the picture")
        }
        copy.pointer.pointee.crop_left = x
        copy.pointer.pointee.crop_top = y
        copy.pointer.pointee.crop_right = full.0 - x - width
        copy.pointer.pointee.crop_bottom = full.1 - y - height
        try check(av_frame_apply_cropping(copy.pointer, Int32(AV_FRAME_CROP_UNALIGNED)), "av_frame_apply_cropping")
        return copy
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var pixelFormat: PixelFormat { PixelFormat(AVPixelFormat(pointer.pointee.format)) }
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }

    /// The picture's own sample aspect ratio: nil when unknown (0/x), else num/den.
    public var sampleAspectRatio: Double? {
        let sar = pointer.pointee.sample_aspect_ratio
        return sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : nil
    }

    /// The presentation timestamp as set (what an encoder reads), in the time base it is given in.
    public var pts: Int64? {
        get { pointer.pointee.pts == moments_nopts() ? nil : pointer.pointee.pts }
        set { pointer.pointee.pts = newValue ?? moments_nopts() }
    }

    /// The best presentation timestamp FFmpeg could work out, in the stream's time base.
    public var timestamp: Int64? {
        let best = pointer.pointee.best_effort_timestamp
        if best != moments_nopts() { return best }
        let pts = pointer.pointee.pts
        return pts == moments_nopts() ? nil : pts
    }

    /// The picture's own presentation timestamp as its packet carried it, else FFmpeg's best
    /// guess, in the stream's time base; the guess also when the two are more than `farApart`
    /// ticks apart. After a seek into an open GOP, FFmpeg 5.1's HEVC decoder was seen to hand
    /// pictures out of display order with their own, right, timestamps; the best guess then
    /// "corrected" them into a steady run, labelling pictures up to two frames off. Seconds after
    /// a seek in MPEG-TS it was seen to give one picture the timestamp of a packet read before the
    /// seek, where the guess had the picture's own.
    public func presentationTimestamp(farApart: Int64) -> Int64? {
        guard let pts else { return timestamp }
        guard let guess = timestamp, abs(guess - pts) > farApart else { return pts }
        return guess
    }

    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }
    /// The decoder's picture type; set it to `.unspecified` before encoding a decoded picture, so
    /// the encoder chooses for itself.
    public var pictureType: PictureType {
        get { PictureType(pointer.pointee.pict_type) }
        set { pointer.pointee.pict_type = newValue.av }
    }

    /// The picture's colour description (what filters and encoders read).
    public var color: ColorDescription {
        get {
            ColorDescription(
                primaries: .init(pointer.pointee.color_primaries), transfer: .init(pointer.pointee.color_trc),
                space: .init(pointer.pointee.colorspace), range: .init(pointer.pointee.color_range))
        }
        set {
            pointer.pointee.color_primaries = newValue.primaries.av
            pointer.pointee.color_trc = newValue.transfer.av
            pointer.pointee.colorspace = newValue.space.av
            pointer.pointee.color_range = newValue.range.av
        }
    }

    /// Allocates buffers for a video frame of the given shape.
    public static func video(width: Int, height: Int, format: PixelFormat) throws(FFmpegError) -> Frame {
        let frame = Frame()
        frame.pointer.pointee.width = Int32(width)
        frame.pointer.pointee.height = Int32(height)
        frame.pointer.pointee.format = format.code
        try check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer")
        return frame
    }

    /// Allocates buffers for an audio frame of the given shape.
    public static func audio(samples: Int, sampleRate: Int, channels: Int, format: SampleFormat) throws(FFmpegError) -> Frame {
        let frame = Frame()
        frame.pointer.pointee.nb_samples = Int32(samples)
        frame.pointer.pointee.sample_rate = Int32(sampleRate)
        frame.pointer.pointee.format = format.av.rawValue
        av_channel_layout_default(&frame.pointer.pointee.ch_layout, Int32(channels))
        try check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer")
        return frame
    }

    /// Makes the buffers writable (copying them if they are shared with another frame).
    public func makeWritable() throws(FFmpegError) {
        try check(av_frame_make_writable(pointer), "av_frame_make_writable")
    }

    /// Base address and line size of plane `index`.
    public func plane(_ index: Int) -> (UnsafeMutablePointer<UInt8>, Int) {
        let (data, lines) = planes(of: pointer)
        return (data[index]!, Int(lines[index]))
    }

    /// The motion vectors the decoder exported (`Decoder.Options.exportMotionVectors`): empty for
    /// an intra picture or a decoder that exports none.
    public var motionVectors: [MotionVector] {
        guard let side = av_frame_get_side_data(pointer, AV_FRAME_DATA_MOTION_VECTORS), let data = side.pointee.data else { return [] }
        let count = Int(side.pointee.size) / MemoryLayout<AVMotionVector>.stride
        let vectors = UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: AVMotionVector.self), count: count)
        return vectors.map { vector in
            let scale = Double(max(1, vector.motion_scale))
            return MotionVector(
                x: Double(vector.motion_x) / scale, y: Double(vector.motion_y) / scale,
                area: Int(vector.w) * Int(vector.h), fromPast: vector.source < 0)
        }
    }
}

/// One block's motion vector, as a decoder exports it.
public struct MotionVector: Sendable, Equatable {
    /// Pixels from the block to where its prediction was taken from in the reference picture
    /// (so the picture content moved by −x, −y), to sub-pixel precision.
    public var x: Double
    public var y: Double
    /// The block's size in pixels (width × height).
    public var area: Int
    /// True when the reference picture comes before this one (false for a B picture's backward reference).
    public var fromPast: Bool
}

/// The data pointers and line sizes of a frame's (up to 8) planes.
func planes(of frame: UnsafeMutablePointer<AVFrame>) -> ([UnsafeMutablePointer<UInt8>?], [Int32]) {
    let d = frame.pointee.data
    let l = frame.pointee.linesize
    return ([d.0, d.1, d.2, d.3, d.4, d.5, d.6, d.7], [l.0, l.1, l.2, l.3, l.4, l.5, l.6, l.7])
}
