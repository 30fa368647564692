import Media

/// Scales decoded pictures to the output geometry (stored orientation) in yuv420p, tone-mapping
/// HDR pictures to SDR BT.709 on the way; with a crop plan, keeps only the window of the moment.
final class PicturePipeline {
    private let geometry: OutputGeometry
    private let scaler: Scaler
    private let toneMapper: ToneMapper?
    private let crop: CropPlan?

    init(geometry: OutputGeometry, info: MediaInfo, crop: CropPlan? = nil) throws {
        self.geometry = geometry
        self.crop = crop
        let transfer = info.colorTransfer.flatMap(ColorDescription.Transfer.init(name:)) ?? .unspecified
        toneMapper = info.isHDR ? try ToneMapper.shared(for: transfer) : nil
        scaler = Scaler(width: geometry.scaledWidth, height: geometry.scaledHeight,
                        format: toneMapper == nil ? .yuv420p : .yuv420p10, filter: .bicubic)
    }

    /// `time`: the picture's source time, where the crop window is taken.
    func prepare(_ decoded: Frame, time: Double = 0) throws -> Frame {
        var frame = decoded
        if let crop, decoded.width == crop.frameWidth, decoded.height == crop.frameHeight {
            let corner = crop.window(at: time)
            frame = try decoded.cropped(x: corner.x, y: corner.y, width: crop.width, height: crop.height)
        }
        let sized = frame.width == geometry.scaledWidth && frame.height == geometry.scaledHeight
            && (frame.sampleAspectRatio ?? 1) == 1
        if let toneMapper {
            var tenBit = frame
            if !sized || frame.pixelFormat != .yuv420p10 {
                tenBit = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: .yuv420p10)
                try scaler.scale(frame, into: tenBit)
            }
            let target = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: .yuv420p)
            try toneMapper.map(tenBit, into: target)
            return target
        }
        // Already the right shape: hand the decoded picture over as it is.
        if sized && frame.pixelFormat == .yuv420p { return frame }
        // A fresh frame each time: the encoder may still hold a reference to the previous one.
        let target = try Frame.video(width: geometry.scaledWidth, height: geometry.scaledHeight, format: .yuv420p)
        try scaler.scale(frame, into: target)
        return target
    }
}
