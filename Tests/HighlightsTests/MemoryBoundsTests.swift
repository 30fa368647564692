import Testing

@testable import Highlights

@Suite("Thumbnail shape")
struct ThumbnailShapeTests {
    @Test(
        "thumbnails fit 64 × 64 as displayed, whatever the shape",
        arguments: [
            (16, 4320, 1.0, 8, 64), (1920, 1080, 1.0, 64, 36), (1080, 1920, 1.0, 36, 64), (320, 180, 1.0 / 64, 8, 64),
            (320, 180, 64.0, 64, 8), (720, 576, 16.0 / 11, 64, 34),
        ] as [(Int, Int, Double, Int, Int)])
    func thumbnailBox(width: Int, height: Int, sar: Double, fitWidth: Int, fitHeight: Int) {
        let size = Thumbnailer.fitted(width: width, height: height, sampleAspectRatio: sar, box: Thumbnail.box)
        #expect(size.width == fitWidth && size.height == fitHeight, "\(size)")
    }
}
