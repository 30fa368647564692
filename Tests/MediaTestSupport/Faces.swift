import Foundation
import MediaSynth

/// Pictures made for the face tests, luma only, with what they hold known by construction: drawn
/// frontal faces (an oval of skin under a cap of hair; dark eyes under brows, a nose's shadow and a
/// mouth, in a face's proportions) at chosen places and sizes, over backgrounds with no face
/// (sensor noise, gradients, blocks and stripes like walls, windows and foliage).
public enum Faces {
    public struct Picture {
        public var width: Int
        public var height: Int
        public var luma: [UInt8]
        /// The faces drawn: centre and width (pixels).
        public var faces: [(x: Double, y: Double, size: Double)]
    }

    /// A background with no face: a gradient, blocks and stripes of random tones, and noise.
    public static func background(width: Int, height: Int, using rng: inout SplitMix64) -> [Double] {
        var plane = [Double](repeating: 0, count: width * height)
        let base = Double.random(in: 60...170, using: &rng), slope = Double.random(in: -60...60, using: &rng)
        for y in 0..<height { for x in 0..<width { plane[y * width + x] = base + slope * Double(x) / Double(width) } }
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            let w = Int.random(in: 4...max(5, width / 3), using: &rng), h = Int.random(in: 4...max(5, height / 2), using: &rng)
            let x0 = Int.random(in: 0..<width, using: &rng), y0 = Int.random(in: 0..<height, using: &rng)
            let tone = Double.random(in: 10...245, using: &rng)
            let stripes = Bool.random(using: &rng) ? Int.random(in: 2...8, using: &rng) : 0
            for y in y0..<min(height, y0 + h) {
                for x in x0..<min(width, x0 + w) where stripes == 0 || (x / stripes) % 2 == 0 { plane[y * width + x] = tone }
            }
        }
        let noise = Double.random(in: 1...10, using: &rng)
        for i in plane.indices { plane[i] += gaussian(using: &rng) * noise }
        return plane
    }

    /// Draws a face centred at (`cx`, `cy`), `size` wide, with skin of tone `skin`.
    public static func draw(face cx: Double, _ cy: Double, size: Double, skin: Double, on plane: inout [Double], width: Int, height: Int) {
        FacePainter.draw(cx: cx, cy: cy, size: size, skin: skin, width: width, height: height) { x, y, value in plane[y * width + x] = value }
    }

    /// A picture of `count` faces (none overlapping, each 16–40 % of the shorter side: the detector looks for faces from 15 %) over a background.
    public static func picture(width: Int, height: Int, faces count: Int, using rng: inout SplitMix64) -> Picture {
        var plane = background(width: width, height: height, using: &rng)
        var faces: [(x: Double, y: Double, size: Double)] = []
        var tries = 0
        while faces.count < count && tries < 200 {
            tries += 1
            let size = Double.random(in: 0.16...0.4, using: &rng) * Double(min(width, height))
            let x = Double.random(in: size * 0.6...(Double(width) - size * 0.6), using: &rng)
            let y = Double.random(in: size * 0.7...(Double(height) - size * 0.7), using: &rng)
            guard !faces.contains(where: { abs($0.x - x) < ($0.size + size) * 0.7 && abs($0.y - y) < ($0.size + size) * 0.8 }) else { continue }
            draw(face: x, y, size: size, skin: Double.random(in: 150...230, using: &rng), on: &plane, width: width, height: height)
            faces.append((x, y, size))
        }
        return Picture(width: width, height: height, luma: plane.map { UInt8(max(0, min(255, $0.rounded()))) }, faces: faces)
    }

    public static func gaussian(using rng: inout SplitMix64) -> Double {
        let u = Double.random(in: Double.ulpOfOne...1, using: &rng), v = Double.random(in: 0...1, using: &rng)
        return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
    }
}
