/// Draws a frontal face as a camera would see one, in a face's proportions: an oval of skin
/// under a cap of hair, dark eyes under brows, a nose's shadow and a mouth. Pictures with faces
/// at known places and sizes for the face detector's tests and the engine's.
public enum FacePainter {
    /// Calls `set(x, y, tone)` for every pixel of a face centred at (`cx`, `cy`), `size` wide,
    /// with skin of tone `skin` (luma, 0…255), inside a `width` × `height` picture.
    public static func draw(
        cx: Double, cy: Double, size: Double, skin: Double, width: Int, height: Int,
        set: (Int, Int, Double) -> Void
    ) {
        func ellipse(
            _ ex: Double, _ ey: Double, _ ra: Double, _ rb: Double, _ value: Double,
            where extra: (Double, Double) -> Bool = { _, _ in true }
        ) {
            let x0 = max(0, Int(ex - ra)), x1 = min(width - 1, Int(ex + ra) + 1)
            let y0 = max(0, Int(ey - rb)), y1 = min(height - 1, Int(ey + rb) + 1)
            guard x0 <= x1, y0 <= y1 else { return }
            for y in y0...y1 {
                for x in x0...x1 {
                    let dx = (Double(x) - ex) / ra, dy = (Double(y) - ey) / rb
                    if dx * dx + dy * dy <= 1, extra(Double(x), Double(y)) { set(x, y, value) }
                }
            }
        }
        let a = size / 2, b = size * 0.62
        ellipse(cx, cy, a, b, skin)
        ellipse(cx, cy - b * 0.15, a * 1.05, b, max(10, skin - 130)) { _, y in y < cy - b * 0.55 }
        for side in [-1.0, 1.0] {
            ellipse(cx + side * size * 0.2, cy - size * 0.08, size * 0.11, size * 0.05, max(10, skin - 140))
            ellipse(cx + side * size * 0.2, cy - size * 0.19, size * 0.13, size * 0.025, max(10, skin - 110))
        }
        ellipse(cx, cy + size * 0.12, size * 0.05, size * 0.08, skin - 25)
        ellipse(cx, cy + size * 0.32, size * 0.16, size * 0.035, max(10, skin - 100))
    }
}
