import Media

/// What one sparse look at the video found: a keyframe and the frames just after it.
struct VideoSample: Sendable {
    var time: Double
    var thumbnail: Thumbnail
    var sharpness: Double
    var brightness: Double
    /// Picture change per frame interval between the keyframe and the next decoded frame.
    var activity: Double?
    /// Motion from the first predicted frame's vectors, in percent of the picture width per second.
    var motion: MotionEstimate?
    /// The faces in the picture; nil when none were looked for.
    var faces: [FaceBox]? = nil
}

/// What the analysis keeps of a sample once its GOP is decided: scalars and the colour layout,
/// never the picture (a long or all-intra video has tens of thousands of samples).
struct SampleFeatures: Sendable {
    var time: Double
    /// Coarse colour layout (`Thumbnail.signature`), for telling shots apart.
    var signature: [Float]
    var sharpness: Double
    var brightness: Double
    var activity: Double?
    var motion: MotionEstimate?
    var faces: [FaceBox]?
}

extension VideoSample {
    var features: SampleFeatures {
        SampleFeatures(
            time: time, signature: thumbnail.signature, sharpness: sharpness, brightness: brightness,
            activity: activity, motion: motion, faces: faces)
    }
}

/// Motion split into what the camera did (the dominant vector) and what moved in the scene.
struct MotionEstimate: Sendable {
    var cameraX: Double
    var cameraY: Double
    var local: Double

    var camera: Double { (cameraX * cameraX + cameraY * cameraY).squareRoot() }

    /// Reads `frame`'s motion vectors; `interval` is seconds between it and its reference.
    init?(frame: Frame, width: Int, interval: Double) {
        let vectors = frame.motionVectors
        guard interval > 0, !vectors.isEmpty else { return nil }
        var xs: [(Double, Double)] = [], ys: [(Double, Double)] = []
        xs.reserveCapacity(vectors.count)
        ys.reserveCapacity(vectors.count)
        var totalWeight = 0.0
        for vector in vectors where vector.fromPast {
            let weight = Double(vector.area)
            xs.append((vector.x, weight))
            ys.append((vector.y, weight))
            totalWeight += weight
        }
        guard totalWeight > 0 else { return nil }
        func weightedMedian(_ values: [(Double, Double)]) -> Double {
            let sorted = values.sorted { $0.0 < $1.0 }
            var acc = 0.0
            for (value, weight) in sorted {
                acc += weight
                if acc >= totalWeight / 2 { return value }
            }
            return sorted.last?.0 ?? 0
        }
        // Motion vectors point from the current block to its source: the picture moved by −mv.
        let mx = weightedMedian(xs), my = weightedMedian(ys)
        var local = 0.0
        for (x, y) in zip(xs, ys) {
            let dx = x.0 - mx, dy = y.0 - my
            local += (dx * dx + dy * dy).squareRoot() * x.1
        }
        let perSecond = 100 / (Double(width) * interval)
        cameraX = -mx * perSecond
        cameraY = -my * perSecond
        self.local = local / totalWeight * perSecond
    }
}
