/// Paints the pictures of a `SyntheticVideo` into 8-bit 4:2:0 planes.
/// Each scene has its own texture, colour and motion, so scenes differ the way real shots do.
struct ScenePainter {
    let video: SyntheticVideo
    private let tiles: [[UInt8]]
    private let chroma: [(u: UInt8, v: UInt8)]
    private static let tileSize = 256

    init(video: SyntheticVideo) {
        self.video = video
        var random = SplitMix64(seed: 0x4d6f6d656e7473)
        tiles = video.scenes.indices.map { _ in Self.makeTile(&random) }
        // Well-separated hues around the colour wheel.
        chroma = video.scenes.indices.map { index in
            let angle = Double(index) * 2.399963  // golden angle: neighbours never look alike
            let radius = 90 * video.saturation
            return (UInt8(128 + radius * cos(angle)), UInt8(128 + radius * sin(angle)))
        }
    }

    /// Smooth value noise (a 16×16 grid interpolated) plus fine grain, so the encoder sees real texture.
    private static func makeTile(_ random: inout SplitMix64) -> [UInt8] {
        let n = tileSize, grid = 16, cell = tileSize / grid
        let coarse = (0..<(grid * grid)).map { _ in Double(random.next() % 160) + 48 }
        var tile = [UInt8](repeating: 0, count: n * n)
        for y in 0..<n {
            let gy = y / cell, fy = Double(y % cell) / Double(cell)
            for x in 0..<n {
                let gx = x / cell, fx = Double(x % cell) / Double(cell)
                let a = coarse[gy * grid + gx], b = coarse[gy * grid + (gx + 1) % grid]
                let c = coarse[((gy + 1) % grid) * grid + gx], d = coarse[((gy + 1) % grid) * grid + (gx + 1) % grid]
                let smooth = (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy
                let grain = Double(Int(random.next() % 17) - 8)
                tile[y * n + x] = UInt8(max(16, min(235, smooth + grain)))
            }
        }
        return tile
    }

    /// Where scene `scene` looks at its frame `local`: camera offset and object positions.
    private func layout(scene: Int, local: Int, frame: Int) -> (ox: Int, oy: Int, objects: [(x: Int, y: Int)]) {
        let s = video.scenes[scene]
        var ox = 0.0, oy = 0.0
        switch s.camera {
        case .still: break
        case .pan(let speed): ox = speed * Double(local)
        case .shaky(let amplitude):
            var r = SplitMix64(seed: UInt64(frame) &* 0x9E3779B97F4A7C15 &+ UInt64(scene))
            ox = (Double(r.next() % 2001) / 1000 - 1) * amplitude
            oy = (Double(r.next() % 2001) / 1000 - 1) * amplitude
        case .handheld(let drift, let sway):
            let t = Double(local) / Double(video.frameRate)
            ox = drift * Double(local) + sway * (0.7 * sin(t * 1.3) + 0.3 * sin(t * 3.7 + 0.5))
            oy = sway * 0.6 * (0.7 * sin(t * 1.1 + 1) + 0.3 * sin(t * 4.3))
        }
        ox += Double(s.shift)
        let w = Double(video.width), h = Double(video.height)
        let inEvent = video.events.contains { frame >= $0.startFrame && frame < $0.startFrame + $0.frames }
        let t = Double(local) / Double(video.frameRate)
        var objects: [(Int, Int)] = []
        if inEvent {
            // Three objects racing across the frame.
            for k in 0..<3 {
                let phase = t * 5.0 + Double(k) * 2.1
                objects.append((Int(w * (0.5 + 0.4 * sin(phase * 2.3))), Int(h * (0.5 + 0.35 * cos(phase * 3.1)))))
            }
        } else if let centre = s.subjectCentre(atLocalFrame: local) {
            objects.append((Int((w * centre.x).rounded()), Int((h * centre.y).rounded())))
        } else {
            objects.append((Int(w * (0.3 + 0.1 * sin(t * 0.8))), Int(h * 0.5)))
        }
        return (Int(ox.rounded()), Int(oy.rounded()), objects)
    }

    /// Paints scene `scene` at frame `frame` with brightness `gain` (0 black … 1 full) into the planes.
    func paint(
        scene: Int, frame: Int, gain: Double,
        y: UnsafeMutablePointer<UInt8>, yStride: Int,
        u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>, cStride: Int
    ) {
        let start = video.scenes[..<scene].reduce(0) { $0 + $1.frames }
        let placed = layout(scene: scene, local: frame - start, frame: frame)
        var ox = placed.ox, objects = placed.objects
        let oy = placed.oy
        let look = video.scenes[scene].look ?? scene
        let tile = tiles[look]
        let n = Self.tileSize, mask = n - 1
        let w = video.width, h = video.height
        let g = Int(max(0, min(1, gain * video.scenes[scene].light)) * 256)
        // Effects that move the camera: a whip pan's swing (and its motion blur), a zoom.
        var zoom = 1.0, blur = 0
        for effect in video.effects {
            switch effect.kind {
            case .flash: break
            case .whip(let pixels):
                ox += Int((Double(pixels) * effect.progress(at: frame)).rounded())
                // Blurred by this frame's own travel.
                let travel = Double(abs(pixels)) * (effect.progress(at: frame) - effect.progress(at: frame - 1))
                blur = max(blur, Int(travel / 2))
            case .zoom(let factor):
                zoom *= 1 + (factor - 1) * effect.progress(at: frame)
            }
        }
        // Which texel each column and row shows: zoomed about the picture's centre.
        let columns = (0..<w).map { (Int(((Double($0) - Double(w) / 2) / zoom + Double(w) / 2).rounded(.down)) + ox) & mask }
        let rows = (0..<h).map { ((Int(((Double($0) - Double(h) / 2) / zoom + Double(h) / 2).rounded(.down)) + oy) & mask) * n }
        let objectSize = Int(Double(max(4, h / 6)) * zoom)
        objects = objects.map {
            (Int((Double($0.x) - Double(w) / 2) * zoom + Double(w) / 2), Int((Double($0.y) - Double(h) / 2) * zoom + Double(h) / 2))
        }
        tile.withUnsafeBufferPointer { t in
            for row in 0..<h {
                let line = y + row * yStride
                let ty = rows[row]
                for col in 0..<w {
                    let value = Int(t[ty + columns[col]])
                    line[col] = UInt8(16 + ((value - 16) * g) >> 8)
                }
            }
        }
        if blur > 0 { Self.blurRows(y, stride: yStride, width: w, height: h, radius: blur) }
        for (cx, cy) in objects {
            let x0 = max(0, cx - objectSize / 2), x1 = min(w, cx + objectSize / 2)
            let y0 = max(0, cy - objectSize / 2), y1 = min(h, cy + objectSize / 2)
            guard x0 < x1, y0 < y1 else { continue }
            let bright = UInt8(16 + (219 * g) >> 8)
            for row in y0..<y1 { (y + row * yStride + x0).update(repeating: bright, count: x1 - x0) }
        }
        for face in video.scenes[scene].faces {
            FacePainter.draw(
                cx: face.x * Double(w), cy: face.y * Double(h), size: face.size * Double(h), skin: face.skin,
                width: w, height: h
            ) { x, row, tone in
                y[row * yStride + x] = UInt8(16 + ((Int(max(16, min(235, tone))) - 16) * g) >> 8)
            }
        }
        if video.orientationMarker {
            let bar = max(2, w / 10)
            let white = UInt8(16 + (219 * g) >> 8)
            for row in 0..<h { (y + row * yStride).update(repeating: white, count: bar) }
        }
        let focus = video.scenes[scene].blur
        if focus > 0 {
            Self.blurRows(y, stride: yStride, width: w, height: h, radius: focus)
            Self.blurColumns(y, stride: yStride, width: w, height: h, radius: focus)
        }
        let (cu, cv) = chroma[look]
        let fu = 128 + ((Int(cu) - 128) * g) >> 8, fv = 128 + ((Int(cv) - 128) * g) >> 8
        for row in 0..<((h + 1) / 2) {
            (u + row * cStride).update(repeating: UInt8(fu), count: (w + 1) / 2)
            (v + row * cStride).update(repeating: UInt8(fv), count: (w + 1) / 2)
        }
    }

    /// A horizontal box blur of `radius` pixels on each row (a fast pan's motion blur).
    private static func blurRows(_ y: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int, radius: Int) {
        var line = [Int](repeating: 0, count: width + 1)
        for row in 0..<height {
            let p = y + row * stride
            for col in 0..<width { line[col + 1] = line[col] + Int(p[col]) }
            for col in 0..<width {
                let a = max(0, col - radius), b = min(width, col + radius + 1)
                p[col] = UInt8((line[b] - line[a]) / (b - a))
            }
        }
    }

    /// A vertical box blur of `radius` pixels on each column.
    private static func blurColumns(_ y: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int, radius: Int) {
        var sums = [Int](repeating: 0, count: height + 1)
        for col in 0..<width {
            for row in 0..<height { sums[row + 1] = sums[row] + Int(y[row * stride + col]) }
            for row in 0..<height {
                let a = max(0, row - radius), b = min(height, row + radius + 1)
                y[row * stride + col] = UInt8((sums[b] - sums[a]) / (b - a))
            }
        }
    }

    /// How white frame `frame` is washed (0 not at all … 1 all white): fades through white.
    func whiteness(of frame: Int) -> Double {
        var start = 0
        for (index, s) in video.scenes.enumerated() {
            let end = start + s.frames
            if index + 1 < video.scenes.count, case .fadeThroughWhite(let n) = video.scenes[index + 1].transitionIn,
                frame >= end - n / 2, frame < end + n / 2
            {
                let distance = frame < end ? end - frame : frame - end + 1
                return 1 - Double(distance) / Double(n / 2 + 1)
            }
            start = end
        }
        return 0
    }

    /// What frame `frame` shows: one scene, or two blended, each with a gain.
    func composition(of frame: Int) -> [(scene: Int, weight: Double, gain: Double)] {
        var start = 0
        var scene = 0
        for (index, s) in video.scenes.enumerated() {
            if frame < start + s.frames { scene = index; break }
            start += s.frames
            scene = index
        }
        // Transition into this scene (boundary at `start`).
        if scene > 0 {
            switch video.scenes[scene].transitionIn {
            case .cut: break
            case .dissolve(let n):
                let first = start - n / 2
                if frame < first + n {
                    let alpha = (Double(frame - first) + 0.5) / Double(n)
                    return [(scene - 1, 1 - alpha, 1), (scene, alpha, 1)]
                }
            case .fadeThroughBlack(let n):
                if frame < start + n / 2 { return [(scene, 1, Double(frame - start + 1) / Double(n / 2 + 1))] }
            case .fadeThroughWhite: break
            }
        }
        // Transition out of this scene (boundary at its end).
        let end = start + video.scenes[scene].frames
        if scene + 1 < video.scenes.count {
            switch video.scenes[scene + 1].transitionIn {
            case .cut: break
            case .dissolve(let n):
                let first = end - n / 2
                if frame >= first {
                    let alpha = (Double(frame - first) + 0.5) / Double(n)
                    return [(scene, 1 - alpha, 1), (scene + 1, alpha, 1)]
                }
            case .fadeThroughBlack(let n):
                if frame >= end - n / 2 { return [(scene, 1, Double(end - frame) / Double(n / 2 + 1))] }
            case .fadeThroughWhite: break
            }
        }
        return [(scene, 1, 1)]
    }
}

/// A small, fast, seedable generator (SplitMix64), so fixtures are identical on every machine.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
