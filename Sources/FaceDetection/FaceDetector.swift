/// Frontal faces found with OpenCV's Haar cascades (read from Debian's opencv-data), in plain
/// Swift. This module is compiled optimised in debug builds too: its scan runs on every picture
/// the analysis samples, tests included, and unoptimised it is twenty times slower.

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
public struct FaceDetector: Sendable {
    public let cascade: FaceCascade
    /// Each pyramid level is this much smaller than the one before: half the levels of
    /// OpenCV's usual 1.1 for nearly the same faces found (docs/engine.md).
    public var scaleStep = 1.2
    public var minimumNeighbours = 3
    /// The smallest face looked for, as a share of the picture's shorter side.
    public var smallestFace = 0.15

    /// The cascade laid out flat for the scan: every stage's stumps in order (their thresholds
    /// and leaf values), where each stage ends in that list and its threshold, and each stump's
    /// feature as three rectangles (a third of weight 0 where the feature has two).
    private let stumps: [FaceCascade.Stump]
    private let stageEnds: [Int]
    private let thresholds: [Float]
    private let rectangles: [FaceCascade.Rect]
    private let weights: [Float]

    public init(cascade: FaceCascade) {
        self.cascade = cascade
        stumps = cascade.stages.flatMap(\.stumps)
        var ends: [Int] = []
        for stage in cascade.stages { ends.append((ends.last ?? 0) + stage.stumps.count) }
        stageEnds = ends
        thresholds = cascade.stages.map(\.threshold)
        let none = FaceCascade.Rect(x: 0, y: 0, width: 0, height: 0, weight: 0)
        rectangles = stumps.flatMap { stump in
            let own = cascade.features[stump.feature].prefix(3)
            return Array(own) + Array(repeating: none, count: 3 - own.count)
        }
        weights = rectangles.map(\.weight)
    }

    /// The faces in a `width` × `height` luma plane (`stride` bytes a row).
    public func faces(in luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> [DetectedFace] {
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
        // The rectangles' four corners as offsets from a window's corner in this level's rows
        // (four a rectangle, twelve a stump), and their weights (three a stump).
        var offsets: [Int] = []
        offsets.reserveCapacity(rectangles.count * 4)
        for r in rectangles {
            let top = r.y * row + r.x, bottom = (r.y + r.height) * row + r.x
            offsets.append(top)
            offsets.append(top + r.width)
            offsets.append(bottom)
            offsets.append(bottom + r.width)
        }
        let (stageEnds, thresholds, weights) = (stageEnds, thresholds, weights)
        let norm = (a: row + 1, b: row + w - 1, c: (h - 1) * row + 1, d: (h - 1) * row + w - 1)
        let area = Double((w - 2) * (h - 2))
        var result: [(Int, Int)] = []
        level.sums.withUnsafeBufferPointer { sums in
            level.squares.withUnsafeBufferPointer { squares in
                offsets.withUnsafeBufferPointer { offsets in
                    weights.withUnsafeBufferPointer { weights in
                        stumps.withUnsafeBufferPointer { stumps in
                            for y in stride(from: 0, through: level.height - h, by: step) {
                                for x in stride(from: 0, through: level.width - w, by: step) {
                                    let p = y * row + x
                                    let sum = Double(sums[p + norm.a] - sums[p + norm.b] - sums[p + norm.c] + sums[p + norm.d])
                                    let square = squares[p + norm.a] - squares[p + norm.b] - squares[p + norm.c] + squares[p + norm.d]
                                    let spread = area * square - sum * sum
                                    // A stump compares its feature over the window's spread with its
                                    // threshold: the threshold times the spread, without a division.
                                    let deviation = Float(spread > 0 ? spread.squareRoot() : 1)
                                    var passed = true, k = 0
                                    for stage in stageEnds.indices {
                                        var total: Float = 0
                                        let end = stageEnds[stage]
                                        while k < end {
                                            let o = k * 12, q = k * 3
                                            func rectangle(_ o: Int) -> Float {
                                                Float(
                                                    sums[p + offsets[o]] &- sums[p + offsets[o + 1]] &- sums[p + offsets[o + 2]]
                                                        &+ sums[p + offsets[o + 3]])
                                            }
                                            var value = weights[q] * rectangle(o) + weights[q + 1] * rectangle(o + 4)
                                            if weights[q + 2] != 0 { value += weights[q + 2] * rectangle(o + 8) }
                                            let stump = stumps[k]
                                            total += value < stump.threshold * deviation ? stump.left : stump.right
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
        }
        return result
    }

    /// Windows merged where they agree (OpenCV's `groupRectangles`, ε = 0.2): each group's mean
    /// square, kept when more than `minimumNeighbours` windows make it and no larger, better
    /// supported face holds it.
    public static func grouped(_ windows: [DetectedFace], minimumNeighbours: Int) -> [DetectedFace] {
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
            return DetectedFace(
                x: group.reduce(0) { $0 + $1.x } / n, y: group.reduce(0) { $0 + $1.y } / n,
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

/// Summed-area tables of a luma plane (whole tones, as OpenCV's pyramid of 8-bit pictures) and of
/// its squares. 32-bit sums are exact up to 8,421,504 pixels (4K); the squares are doubles.
struct IntegralImage {
    let width: Int
    let height: Int
    private(set) var sums: [Int32]
    private(set) var squares: [Double]

    init(_ luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) {
        self.init(width: width, height: height) { x, y in Int32(luma[y * stride + x]) }
    }

    init(width: Int, height: Int, value: (Int, Int) -> Int32) {
        self.width = width
        self.height = height
        let row = width + 1
        var sums = [Int32](repeating: 0, count: row * (height + 1))
        var squares = [Double](repeating: 0, count: row * (height + 1))
        for y in 0..<height {
            var line: Int32 = 0, lineSquares = 0.0
            for x in 0..<width {
                let v = value(x, y)
                line += v
                lineSquares += Double(v * v)
                sums[(y + 1) * row + x + 1] = sums[y * row + x + 1] + line
                squares[(y + 1) * row + x + 1] = squares[y * row + x + 1] + lineSquares
            }
        }
        self.sums = sums
        self.squares = squares
    }

    /// The sum over `x0..<x1` × `y0..<y1`.
    func sum(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> Int32 {
        let row = width + 1
        return sums[y1 * row + x1] - sums[y0 * row + x1] - sums[y1 * row + x0] + sums[y0 * row + x0]
    }

    /// The picture shrunk by `factor` (each pixel the mean of the pixels it covers, rounded), as tables.
    func shrunk(by factor: Double) -> IntegralImage {
        guard factor > 1 else { return self }
        let w = Int(Double(width) / factor), h = Int(Double(height) / factor)
        let xs = (0...w).map { min(width, Int((Double($0) * factor).rounded())) }
        let ys = (0...h).map { min(height, Int((Double($0) * factor).rounded())) }
        return IntegralImage(width: w, height: h) { x, y in
            let area = Int32(max(1, (xs[x + 1] - xs[x]) * (ys[y + 1] - ys[y])))
            return (sum(xs[x], ys[y], max(xs[x] + 1, xs[x + 1]), max(ys[y] + 1, ys[y + 1])) + area / 2) / area
        }
    }
}
