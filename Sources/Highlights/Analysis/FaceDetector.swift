import Foundation

/// A face found in a picture: its square (pixels of the picture it was found in) and how many
/// overlapping windows of the cascade agreed on it.
public struct DetectedFace: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var size: Double
    public var neighbours: Int

    public var centreX: Double { x + size / 2 }
    public var centreY: Double { y + size / 2 }
}

/// Finds frontal faces in a luma plane with a `FaceCascade`, as OpenCV's `detectMultiScale` does:
/// the picture is shrunk step by step (area averaging) so faces of every size meet the cascade's
/// window, each window the cascade accepts is kept, and windows that agree (overlapping, of similar
/// size) are merged; a face needs `minimumNeighbours` + 1 of them, a stray window is noise.
struct FaceDetector: Sendable {
    let cascade: FaceCascade
    /// Each pyramid level is this much smaller than the one before.
    var scaleStep = 1.1
    var minimumNeighbours = 3
    /// The smallest face looked for, as a share of the picture's shorter side.
    var smallestFace = 0.1

    init(cascade: FaceCascade) {
        self.cascade = cascade
    }

    /// The faces in a `width` × `height` luma plane (`stride` bytes a row).
    func faces(in luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> [DetectedFace] {
        guard width >= cascade.width, height >= cascade.height, luma.count >= (height - 1) * stride + width else { return [] }
        let full = IntegralImage(luma, width: width, height: height, stride: stride)
        var windows: [DetectedFace] = []
        var factor = max(1, smallestFace * Double(min(width, height)) / Double(cascade.height))
        while Int(Double(width) / factor) >= cascade.width && Int(Double(height) / factor) >= cascade.height {
            let level = full.shrunk(by: factor)
            let step = factor > 2 ? 1 : 2
            for (x, y) in accepted(in: level, step: step) {
                windows.append(DetectedFace(x: Double(x) * factor, y: Double(y) * factor, size: Double(cascade.width) * factor, neighbours: 1))
            }
            factor *= scaleStep
        }
        return Self.grouped(windows, minimumNeighbours: minimumNeighbours)
    }

    /// The top-left corners of the windows of `level` every stage accepts.
    private func accepted(in level: IntegralImage, step: Int) -> [(Int, Int)] {
        let row = level.width + 1
        let w = cascade.width, h = cascade.height
        // Each feature's rectangles as the offsets of their four corners from a window's corner,
        // laid out flat: feature k's rectangles are `rects[firsts[k]..<firsts[k + 1]]`.
        var firsts = [0], corners: [(a: Int, b: Int, c: Int, d: Int, weight: Double)] = []
        for rects in cascade.features {
            for r in rects {
                corners.append((r.y * row + r.x, r.y * row + r.x + r.width, (r.y + r.height) * row + r.x,
                                (r.y + r.height) * row + r.x + r.width, Double(r.weight)))
            }
            firsts.append(corners.count)
        }
        let stumps = cascade.stages.flatMap(\.stumps)
        var stageEnds: [Int] = [], thresholds: [Float] = []
        for stage in cascade.stages {
            stageEnds.append((stageEnds.last ?? 0) + stage.stumps.count)
            thresholds.append(stage.threshold)
        }
        let norm = (a: row + 1, b: row + w - 1, c: (h - 1) * row + 1, d: (h - 1) * row + w - 1)
        let area = Double((w - 2) * (h - 2))
        var result: [(Int, Int)] = []
        level.sums.withUnsafeBufferPointer { sums in
            level.squares.withUnsafeBufferPointer { squares in
                corners.withUnsafeBufferPointer { corners in
                    stumps.withUnsafeBufferPointer { stumps in
                        for y in stride(from: 0, through: level.height - h, by: step) {
                            for x in stride(from: 0, through: level.width - w, by: step) {
                                let p = y * row + x
                                let sum = sums[p + norm.a] - sums[p + norm.b] - sums[p + norm.c] + sums[p + norm.d]
                                let square = squares[p + norm.a] - squares[p + norm.b] - squares[p + norm.c] + squares[p + norm.d]
                                let spread = area * square - sum * sum
                                let scale = spread > 0 ? 1 / spread.squareRoot() : 1
                                var passed = true, k = 0
                                for (stage, end) in stageEnds.enumerated() {
                                    var total: Float = 0
                                    while k < end {
                                        let stump = stumps[k]
                                        var value = 0.0
                                        for r in firsts[stump.feature]..<firsts[stump.feature + 1] {
                                            let c = corners[r]
                                            value += c.weight * (sums[p + c.a] - sums[p + c.b] - sums[p + c.c] + sums[p + c.d])
                                        }
                                        total += Float(value * scale) < stump.threshold ? stump.left : stump.right
                                        k += 1
                                    }
                                    if total < thresholds[stage] { passed = false; break }
                                }
                                if passed { result.append((x, y)) }
                            }
                        }
                    }
                }
            }
        }
        return result
    }

    /// Windows merged where they agree (OpenCV's `groupRectangles`, ε = 0.2): each group's mean
    /// square, kept when more than `minimumNeighbours` windows make it and no larger, better
    /// supported face holds it.
    static func grouped(_ windows: [DetectedFace], minimumNeighbours: Int) -> [DetectedFace] {
        func similar(_ a: DetectedFace, _ b: DetectedFace) -> Bool {
            let delta = 0.2 * min(a.size, b.size)
            return abs(a.x - b.x) <= delta && abs(a.y - b.y) <= delta && abs(a.x + a.size - b.x - b.size) <= delta
                && abs(a.y + a.size - b.y - b.size) <= delta
        }
        // Union–find over the pairs that agree.
        var parent = Array(windows.indices)
        func root(_ i: Int) -> Int {
            var i = i
            while parent[i] != i { parent[i] = parent[parent[i]]; i = parent[i] }
            return i
        }
        for i in windows.indices {
            for j in windows.indices where j > i && similar(windows[i], windows[j]) { parent[root(i)] = root(j) }
        }
        var groups: [Int: [DetectedFace]] = [:]
        for i in windows.indices { groups[root(i), default: []].append(windows[i]) }
        let faces = groups.values.filter { $0.count > minimumNeighbours }.map { group in
            let n = Double(group.count)
            return DetectedFace(x: group.reduce(0) { $0 + $1.x } / n, y: group.reduce(0) { $0 + $1.y } / n,
                                size: group.reduce(0) { $0 + $1.size } / n, neighbours: group.count)
        }
        // A face inside a larger one that more windows found is part of it.
        return faces.filter { face in
            !faces.contains { other in
                other != face && other.size > face.size && other.neighbours >= max(3, face.neighbours)
                    && face.x >= other.x - 0.2 * other.size && face.y >= other.y - 0.2 * other.size
                    && face.x + face.size <= other.x + other.size * 1.2 && face.y + face.size <= other.y + other.size * 1.2
            }
        }.sorted { ($0.y, $0.x) < ($1.y, $1.x) }
    }
}

/// Summed-area tables of a luma plane and of its squares (doubles: exact for any picture size).
struct IntegralImage {
    let width: Int
    let height: Int
    private(set) var sums: [Double]
    private(set) var squares: [Double]

    init(_ luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) {
        self.init(width: width, height: height) { x, y in Double(luma[y * stride + x]) }
    }

    init(width: Int, height: Int, value: (Int, Int) -> Double) {
        self.width = width
        self.height = height
        let row = width + 1
        var sums = [Double](repeating: 0, count: row * (height + 1))
        var squares = sums
        for y in 0..<height {
            var line = 0.0, lineSquares = 0.0
            for x in 0..<width {
                let v = value(x, y)
                line += v
                lineSquares += v * v
                sums[(y + 1) * row + x + 1] = sums[y * row + x + 1] + line
                squares[(y + 1) * row + x + 1] = squares[y * row + x + 1] + lineSquares
            }
        }
        self.sums = sums
        self.squares = squares
    }

    /// The sum over `x0..<x1` × `y0..<y1`.
    func sum(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> Double {
        let row = width + 1
        return sums[y1 * row + x1] - sums[y0 * row + x1] - sums[y1 * row + x0] + sums[y0 * row + x0]
    }

    /// The picture shrunk by `factor` (each pixel the mean of the pixels it covers), as tables.
    func shrunk(by factor: Double) -> IntegralImage {
        guard factor > 1 else { return self }
        let w = Int(Double(width) / factor), h = Int(Double(height) / factor)
        let xs = (0...w).map { min(width, Int((Double($0) * factor).rounded())) }
        let ys = (0...h).map { min(height, Int((Double($0) * factor).rounded())) }
        return IntegralImage(width: w, height: h) { x, y in
            let area = Double(max(1, (xs[x + 1] - xs[x]) * (ys[y + 1] - ys[y])))
            return sum(xs[x], ys[y], max(xs[x] + 1, xs[x + 1]), max(ys[y] + 1, ys[y + 1])) / area
        }
    }
}
