import CFFmpeg

/// Owns a `SwsContext`: converts video frames to another size and pixel format.
/// The context is rebuilt only when the source shape changes (mid-stream resolution changes happen).
public final class Scaler {
    private var context: OpaquePointer?
    private var sourceShape: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)
    public let width: Int
    public let height: Int
    public let format: PixelFormat
    private let flags: Int32

    public enum Filter: Sendable { case fast, area, bicubic }

    public init(width: Int, height: Int, format: PixelFormat, filter: Filter = .area) {
        self.width = width
        self.height = height
        self.format = format
        switch filter {
        case .fast: flags = SWS_FAST_BILINEAR
        case .area: flags = SWS_AREA
        case .bicubic: flags = SWS_BICUBIC
        }
    }

    deinit { sws_freeContext(context) }

    /// Scales `source` into `destination`, which must already have buffers of this scaler's shape.
    public func scale(_ source: Frame, into destination: Frame) throws(FFmpegError) {
        let src = source.pointer
        let shape = (src.pointee.width, src.pointee.height, src.pointee.format)
        if context == nil || shape != sourceShape {
            sws_freeContext(context)
            context = sws_getContext(shape.0, shape.1, AVPixelFormat(shape.2), Int32(width), Int32(height), format.av, flags, nil, nil, nil)
            sourceShape = shape
            guard context != nil else { throw FFmpegError(moments_averror_invaliddata(), "sws_getContext") }
        }
        try destination.makeWritable()
        let (srcData, srcLines) = planes(of: src)
        let (dstData, dstLines) = planes(of: destination.pointer)
        let result = sws_scale(context, srcData.map { UnsafePointer($0) }, srcLines, 0, shape.1, dstData, dstLines)
        try check(result, "sws_scale")
    }

    /// A new frame of this scaler's shape holding `source` scaled.
    public func scaled(_ source: Frame) throws(FFmpegError) -> Frame {
        let destination = try Frame.video(width: width, height: height, format: format)
        try scale(source, into: destination)
        destination.pointer.pointee.pts = source.pointer.pointee.pts
        return destination
    }
}
