import MomentsModel

/// The rendered picture size: the source as displayed (square pixels, upright), fitted to the
/// quality's long side, never upscaled, with even sides as 4:2:0 requires.
struct OutputGeometry: Equatable {
    /// Size after rotation (what the viewer sees).
    let width: Int
    let height: Int
    /// Size to scale to before rotating (stored orientation).
    let scaledWidth: Int
    let scaledHeight: Int
    let rotation: Int

    init(info: MediaInfo, quality: Quality) {
        let shownWidth = Double(info.width) * info.sampleAspectRatio
        let shownHeight = Double(info.height)
        let upright = info.rotation % 180 == 0 ? (shownWidth, shownHeight) : (shownHeight, shownWidth)
        let long = max(upright.0, upright.1)
        let scale = min(1, Double(quality.maxLongSide) / long)
        func even(_ v: Double) -> Int { max(2, Int((v * scale / 2).rounded(.down)) * 2) }
        width = even(upright.0)
        height = even(upright.1)
        rotation = info.rotation
        scaledWidth = rotation % 180 == 0 ? width : height
        scaledHeight = rotation % 180 == 0 ? height : width
    }
}
