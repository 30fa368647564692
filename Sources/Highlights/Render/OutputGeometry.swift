import Media
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

    /// `crop`: the stored pixels a crop window keeps (another shape than the source's).
    init(info: MediaInfo, quality: Quality, crop: CropPlan? = nil) {
        self.init(
            width: crop?.width ?? info.width, height: crop?.height ?? info.height, sampleAspectRatio: info.sampleAspectRatio,
            rotation: info.rotation, quality: quality)
    }

    init(width: Int, height: Int, sampleAspectRatio: Double, rotation: Int, quality: Quality) {
        let shownWidth = Double(width) * sampleAspectRatio
        let shownHeight = Double(height)
        let (w, h) = rotation % 180 == 0 ? (shownWidth, shownHeight) : (shownHeight, shownWidth)
        let long = max(w, h)
        let limit = Double(quality.maxLongSide)
        // Round down to even, with a hair of tolerance so 1920 × (854/1920) stays 854.
        func even(_ v: Double) -> Int { max(2, Int(v / 2 + 1e-6) * 2) }
        if long > limit {
            let scale = limit / long
            self.width = even(w * scale)
            self.height = even(h * scale)
        } else {
            self.width = even(w)
            self.height = even(h)
        }
        self.rotation = rotation
        scaledWidth = rotation % 180 == 0 ? self.width : self.height
        scaledHeight = rotation % 180 == 0 ? self.height : self.width
    }
}
