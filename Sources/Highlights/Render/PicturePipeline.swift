import Media

/// Scales decoded pictures to the output geometry (stored orientation) in yuv420p, tone-mapping
/// HDR pictures to SDR BT.709 on the way; with a crop plan, keeps only the window of the moment.
final class PicturePipeline {
    private let geometry: OutputGeometry
    private let scaler: Scaler
    /// The second half of `prepare` for HDR sources (nil for SDR): Sendable, for the render's writer.
    let toneMapper: ToneMapper?
    private let crop: CropPlan?

    convenience init(geometry: OutputGeometry, info: MediaInfo, crop: CropPlan? = nil) throws {
        let transfer = info.colorTransfer.flatMap(ColorDescription.Transfer.init(name:)) ?? .unspecified
        try self.init(geometry: geometry, hdr: info.isHDR ? transfer : nil, crop: crop)
    }

    /// `hdr`: the HDR source's transfer function (HLG or PQ), nil for SDR.
    init(geometry: OutputGeometry, hdr transfer: ColorDescription.Transfer?, crop: CropPlan? = nil) throws {
        self.geometry = geometry
        self.crop = crop
        toneMapper = try transfer.map { try ToneMapper.shared(for: $0) }
        scaler = Scaler(
            width: geometry.scaledWidth, height: geometry.scaledHeight,
            format: toneMapper == nil ? .yuv420p : .yuv420p10, filter: .bicubic)
    }

    /// `time`: the picture's source time, where the crop window is taken.
    func prepare(_ decoded: Frame, time: Double = 0) throws -> Frame {
        let sized = try scaled(decoded, time: time)
        return try toneMapper?.mapped(sized) ?? sized
    }

    /// The first half of `prepare`: cropped and scaled to the output's size; an HDR picture is
    /// still 10-bit, for `toneMapper`. The render runs the halves on two threads (the reader
    /// scales while the writer tone-maps the picture before), so a 4K HDR picture's decode,
    /// scale and tone map do not queue behind each other on one.
    func scaled(_ decoded: Frame, time: Double = 0) throws -> Frame {
        var frame = decoded
        if let crop, decoded.width == crop.frameWidth, decoded.height == crop.frameHeight {
            let corner = crop.window(at: time)
            frame = try decoded.cropped(x: corner.x, y: corner.y, width: crop.width, height: crop.height)
        }
        let sized =
            frame.width == geometry.scaledWidth && frame.height == geometry.scaledHeight
            && (frame.sampleAspectRatio ?? 1) == 1
        let format: PixelFormat = toneMapper == nil ? .yuv420p : .yuv420p10
        // Already the right shape: hand the decoded picture over as it is.
        if sized && frame.pixelFormat == format { return frame }
        // A fresh frame each time: the encoder may still hold a reference to the previous one.
        let target = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: format)
        try scaler.scale(frame, into: target)
        return target
    }
}
