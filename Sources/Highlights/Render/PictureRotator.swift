import CFFmpeg
import Media

/// Rotates 8-bit 4:2:0 pictures by a multiple of 90° clockwise, so output is upright without
/// relying on players to honour a display matrix.
enum PictureRotator {
    /// Writes `source` rotated by `degrees` (90, 180, 270) into `destination` (already shaped).
    static func rotate(_ source: Frame, degrees: Int, into destination: Frame) throws {
        try destination.makeWritable()
        for plane in 0..<3 {
            let (src, srcStride) = source.plane(plane)
            let (dst, dstStride) = destination.plane(plane)
            let shift = plane == 0 ? 0 : 1
            let w = source.width >> shift, h = source.height >> shift
            switch degrees {
            case 90:
                // dst(x, y) = src(y, h − 1 − x): the left column becomes the top row.
                for y in 0..<w {
                    let line = dst + y * dstStride
                    for x in 0..<h { line[x] = src[(h - 1 - x) * srcStride + y] }
                }
            case 180:
                for y in 0..<h {
                    let line = dst + y * dstStride
                    let from = src + (h - 1 - y) * srcStride
                    for x in 0..<w { line[x] = from[w - 1 - x] }
                }
            case 270:
                for y in 0..<w {
                    let line = dst + y * dstStride
                    for x in 0..<h { line[x] = src[x * srcStride + (w - 1 - y)] }
                }
            default:
                for y in 0..<h { (dst + y * dstStride).update(from: src + y * srcStride, count: w) }
            }
        }
    }
}
