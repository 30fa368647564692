import Foundation
import MediaSynth
import MomentsModel

extension PipelineCase {
    /// How much work one case may be: the suite keeps each case to seconds on a debug build; the
    /// soak draws from the whole space (1080p and phone sizes, minutes of footage).
    public enum Budget: String, Sendable, Codable {
        case suite, soak

        /// Pixels painted over the whole source (width × height × frames).
        var pixels: Int {
            switch self {
            case .suite: 12_000_000
            case .soak: 160_000_000
            }
        }
    }

    /// The frame rates drawn: whole rate, NTSC (× 1000/1001), and the timing of the frames.
    public static let rates: [(rate: Int, ntsc: Bool, timing: String)] = [
        (24, true, "constant"), (25, false, "constant"), (30, true, "constant"), (30, false, "constant"),
        (50, false, "constant"), (60, true, "constant"), (60, false, "constant"), (30, false, "alternating"), (30, false, "low-light"),
    ]
    /// (codec, bit depth).
    public static let codecs: [(String, Int)] = [("h264", 8), ("hevc", 8), ("hevc", 10)]
    public static let containers = ["mp4", "mov", "mkv", "ts"]
    static let phoneSizes: [(Int, Int)] = [(1918, 1080), (720, 1280), (1080, 1080), (1920, 1080), (1280, 720), (1080, 1920), (854, 480)]
    static let pixelAspects: [[Int]] = [[4, 3], [3, 4], [8, 9], [32, 27], [10, 11]]

    /// A case drawn from `seed`. With `stratum` (the case's index in a fixed set), the frame rate,
    /// codec, container, rotation, audio and shape of the frame cycle through every choice, so a
    /// set of a few dozen covers each of them.
    public init(seed: UInt64, budget: Budget, stratum: Int? = nil) {
        // The seed hashed first: SplitMix64's sequences from neighbouring states are the same, shifted.
        var mixer = SplitMix64(seed: seed)
        var random = SplitMix64(seed: mixer.next())
        func uniform(_ range: ClosedRange<Double>) -> Double { Double.random(in: range, using: &random) }
        func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        func pick<T>(_ items: [T], cycle: Int? = nil) -> T {
            let drawn = int(0...(items.count - 1))
            return items[cycle.map { $0 % items.count } ?? drawn]
        }
        let strata = stratum.map { i in (rate: i, codec: i / 2, container: i / 3, rotation: i / 4, audio: i / 5, aspect: i, size: i / 6) }

        self.seed = seed
        let rate = pick(Self.rates, cycle: strata?.rate)
        frameRate = rate.rate
        ntsc = rate.ntsc
        timing = rate.timing
        rateRuns = []
        if timing == "low-light" {
            // A phone in low light: bright stretches at 30 fps, dim ones at 20, of uneven lengths.
            rateRuns = (0..<int(1...3)).flatMap { _ in [[int(8...60), 30], [int(6...40), 20]] }
        }
        let (codec, depth) = pick(Self.codecs, cycle: strata?.codec)
        self.codec = codec
        bitDepth = depth
        container = pick(Self.containers, cycle: strata?.container)
        // Rotation is a display matrix: MP4 and MOV carry it.
        rotation = container == "mp4" || container == "mov" ? pick([0, 90, 180, 270], cycle: strata?.rotation) : 0

        // Length first (1 s to five minutes, mostly short), then a size the budget allows for it.
        let nominal = ntsc ? Double(frameRate) * 1000 / 1001 : Double(frameRate)
        let seconds: Double
        switch uniform(0...1) {
        case ..<0.45: seconds = uniform(1...12)
        case ..<0.8: seconds = uniform(12...45)
        case ..<0.95: seconds = uniform(45...150)
        default: seconds = uniform(150...300)
        }
        let frames = max(Int((seconds * nominal).rounded()), Int(nominal.rounded(.up)) + 1)
        let sizeKind = strata.map { $0.size % 5 } ?? int(0...9)
        var (w, h): (Int, Int)
        fullChroma = false
        switch sizeKind {
        case 0:  // a phone's or camera's own size, short enough to fit the budget
            (w, h) = pick(Self.phoneSizes)
        case 1:  // an odd size: 4:4:4 is the chroma that allows it
            (w, h) = (int(33...160) * 2 + 1, int(24...90) * 2 + 1)
            fullChroma = true
        default:
            let shape = pick([16.0 / 9, 9.0 / 16, 1, 4.0 / 3, 3.0 / 4, 2.35])
            w = int(48...320) * 2
            h = max(64, Int((Double(w) / shape / 2).rounded()) * 2)
        }
        // x265 needs at least 64 × 64; shrink in steps of 2 until the budget holds.
        w = max(64, w)
        h = max(64, h)
        while w * h * frames > budget.pixels && w > 64 && h > 64 {
            w = max(64, Int(Double(w) * 0.8 / 2) * 2 + (fullChroma ? 1 : 0))
            h = max(64, Int(Double(h) * 0.8 / 2) * 2 + (fullChroma ? 1 : 0))
        }
        width = w
        height = h
        // What is still over the budget at the smallest size is made shorter.
        let affordable = max(Int(nominal.rounded(.up)) + 1, min(frames, budget.pixels / max(1, w * h)))
        pixelAspect = chance(0.15) ? pick(Self.pixelAspects) : [1, 1]

        gopFrames = max(1, Int((uniform(0.5...5) * nominal).rounded()))
        openGOP = chance(0.4)
        bFrames = chance(0.6) ? int(1...3) : 0

        switch strata.map({ $0.audio % 3 }) ?? pick([0, 0, 0, 0, 1, 2]) {
        case 1: audio = "none"
        case 2: audio = "short"
        default: audio = "aac"
        }
        audioRate = pick([48_000, 44_100])
        startTime = chance(0.2) ? (uniform(0.05...10) * 1000).rounded() / 1000 : 0

        // Scenes of 0.3 s to 20 s until the frames are used; transitions at whatever frame they fall.
        var scenes: [Scene] = []
        var left = affordable
        while left > 0 {
            let length = min(left, max(1, Int((uniform(0.3...20) * nominal).rounded())))
            let kind = scenes.isEmpty ? "cut" : pick(["cut", "cut", "cut", "cut", "dissolve", "dissolve", "fade-black", "fade-white"])
            let transitionFrames = kind == "cut" ? 0 : int(2...max(2, min(60, length, scenes.last?.frames ?? 2)))
            scenes.append(
                Scene(
                    frames: length, transition: kind, transitionFrames: transitionFrames,
                    camera: pick(["still", "pan", "shaky", "handheld"]),
                    light: chance(0.08) ? uniform(0.02...0.2) : 1, blur: chance(0.05) ? int(3...8) : 0))
            left -= length
        }
        self.scenes = scenes
        let total = scenes.reduce(0) { $0 + $1.frames }
        audioSeconds = audio == "short" ? (uniform(0.2...0.9) * Double(total) / nominal * 1000).rounded() / 1000 : nil

        events = []
        if chance(0.3), total > Int(nominal * 2) {
            let length = min(total / 2, int(Int(nominal)...Int(3 * nominal)))
            events = [[int(0...(total - length)), length]]
        }
        // A mark every 0.35–0.8 s, never inside an event's bursts or within a third of a second of them.
        var marks: [Int] = []
        var frame = int(0...Int(nominal / 2))
        let margin = Int(nominal / 3)
        while frame < total {
            let clear = events.allSatisfy { frame < $0[0] - margin || frame > $0[0] + $0[1] + margin }
            if clear { marks.append(frame) }
            frame += max(2, Int((uniform(0.35...0.8) * nominal).rounded()))
        }
        self.marks = marks

        // The settings.
        switch uniform(0...1) {
        case ..<0.6: target = (uniform(5...45)).rounded()
        default: target = (uniform(5...120)).rounded()
        }
        quality = pick([Quality.high, .medium, .low].map(\.rawValue))
        videoCodec = chance(0.7) ? "auto" : "h264"
        let aspects = AspectRatio.allCases.map(\.rawValue)
        aspect = strata.map { aspects[$0.aspect % aspects.count] } ?? (chance(0.6) ? "source" : pick(Array(aspects.dropFirst())))
        minSegment = nil
        maxSegment = nil
        maxSegments = nil
        if chance(0.3) {
            var choices = HighlightChoices()
            if chance(0.5) { choices.minSegment = (uniform(1...8) * 10).rounded() / 10 }
            if chance(0.5) { choices.maxSegment = (uniform(1...12) * 10).rounded() / 10 }
            if chance(0.5) { choices.maxSegments = int(1...12) }
            if (try? choices.check(targetDuration: target)) != nil {
                (minSegment, maxSegment, maxSegments) = (choices.minSegment, choices.maxSegment, choices.maxSegments)
            }
        }
        poster = chance(0.85)
        thumbnails = chance(0.85)
        // Drawn last, so the draws above (and the sources of seeds found before) stay as they were.
        fps = chance(0.7) ? FrameRateChoice.upTo30.rawValue : FrameRateChoice.source.rawValue
        // quality=original (the source's size and rate) came later still: drawn after everything.
        if chance(0.12) { (quality, fps) = (Quality.original.rawValue, FrameRateChoice.source.rawValue) }
    }

    /// The fixed set the test suite runs: `count` cases from `seed`, strata cycling.
    public static func fixedSet(count: Int, seed: UInt64 = 0x6d6f6d656e7473) -> [PipelineCase] {
        (0..<count).map { PipelineCase(seed: seed &+ UInt64($0), budget: .suite, stratum: $0) }
    }
}

extension PipelineCase {
    /// The same case with about half its frames (the scenes from the end cut away), or nil when it
    /// is as short as a case gets.
    public func shorter() -> PipelineCase? {
        let keep = frameCount / 2
        guard keep >= 2 * frameRate else { return nil }
        var copy = self
        var left = keep
        copy.scenes = scenes.compactMap { scene in
            guard left > 0 else { return nil }
            var cut = scene
            cut.frames = min(scene.frames, left)
            cut.transitionFrames = min(cut.transitionFrames, cut.frames)
            left -= cut.frames
            return cut
        }
        copy.marks = marks.filter { $0 < keep }
        copy.events = events.filter { $0[0] + $0[1] <= keep }
        copy.audioSeconds = audioSeconds.map { min($0, copy.duration) }
        return copy
    }

    /// The same case at about half the width and height, or nil when it is as small as a case gets.
    public func smaller() -> PipelineCase? {
        guard width > 128 || height > 128 else { return nil }
        var copy = self
        func half(_ side: Int) -> Int { max(64, side / 4 * 2 + (fullChroma ? 1 : 0)) }
        copy.width = half(width)
        copy.height = half(height)
        return copy
    }
}
