import Foundation
import Testing
@testable import Highlights

/// The cut rules on runs of 64 × 36 pictures built for them: a textured scene seen through a
/// window that a camera moves, so every step's size follows from how far the window moved.
@Suite("Scene detector: bursts of motion and cuts beside them")
struct SceneDetectorRuleTests {
    static let width = 64, height = 36

    static func hash(_ values: Int...) -> UInt64 {
        var h: UInt64 = 0xcbf29ce484222325
        for value in values { h = (h ^ UInt64(truncatingIfNeeded: value)) &* 0x100000001b3 }
        return h ^ (h >> 29)
    }

    /// The scene `seed` (blocks of 8 × 8 pixels of hashed brightness, one colour cast per scene)
    /// seen through the window `dx` pixels from its left edge, with a sensor's grain of ±2 that
    /// changes with `frame` (so a steady shot's steps are small but never nothing).
    static func picture(seed: Int, dx: Int, frame: Int) -> Thumbnail {
        var y: [UInt8] = []
        for row in 0..<height {
            for col in 0..<width {
                let base = 40 + Int(hash(seed, (col + dx) / 8, row / 8) % 170)
                y.append(UInt8(base + Int(hash(frame, col, row) % 5) - 2))
            }
        }
        let count = width * height
        return Thumbnail(width: width, height: height, y: y, u: [UInt8](repeating: UInt8(100 + seed * 9 % 50), count: count),
                         v: [UInt8](repeating: UInt8(140 - seed * 7 % 40), count: count))
    }

    static func blend(_ a: Thumbnail, _ b: Thumbnail) -> Thumbnail {
        func mix(_ p: [UInt8], _ q: [UInt8]) -> [UInt8] { zip(p, q).map { UInt8((Int($0) + Int($1)) / 2) } }
        return Thumbnail(width: a.width, height: a.height, y: mix(a.y, b.y), u: mix(a.u, b.u), v: mix(a.v, b.v))
    }

    /// The changes the detector finds in one run of these pictures, as frame numbers and kinds.
    static func changes(_ pictures: [Thumbnail], settings: SceneDetector.Settings = .init()) -> [(frame: Double, kind: TransitionKind)] {
        let detector = SceneDetector(frameInterval: 1.0 / 30, settings: settings)
        detector.beginRun(baseline: 0)
        for (k, picture) in pictures.enumerated() { detector.push(time: Double(k) / 30, thumbnail: picture) }
        detector.endRun()
        return detector.changes.map { ($0.time * 30, $0.kind) }
    }

    /// Still for 30 frames, the window swept 120 pixels over `frames` frames at one speed, still again.
    static func sweep(frames: Int) -> [Thumbnail] {
        (0..<30).map { picture(seed: 1, dx: 0, frame: $0) }
            + (1...frames).map { picture(seed: 1, dx: 120 * $0 / frames, frame: 29 + $0) }
            + (0..<30).map { picture(seed: 1, dx: 120, frame: 30 + frames + $0) }
    }

    @Test("A quick pan or zoom, every step as large as a cut's and as the steps beside it, is not a cut", arguments: [3, 5, 7])
    func burstIsNoCut(frames: Int) {
        let found = Self.changes(Self.sweep(frames: frames))
        #expect(found.isEmpty, "found \(found)")
    }

    @Test("Without the burst rule the same sweep is taken for cuts (the fixture exercises the rule)")
    func burstNeedsTheRule() {
        var settings = SceneDetector.Settings()
        settings.burstShare = .infinity
        #expect(!Self.changes(Self.sweep(frames: 5), settings: settings).isEmpty)
    }

    @Test("A cut made over two frames (one blended frame between the shots) is one cut, on the blend or the frame after")
    func blendedCutIsACut() {
        let pictures = (0..<30).map { Self.picture(seed: 1, dx: 0, frame: $0) }
            + [Self.blend(Self.picture(seed: 1, dx: 0, frame: 30), Self.picture(seed: 2, dx: 0, frame: 30))]
            + (31..<61).map { Self.picture(seed: 2, dx: 0, frame: $0) }
        let found = Self.changes(pictures)
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .cut && (29.99...31.01).contains($0.frame) }, "found \(found)")
    }

    @Test("A cut between two panning shots (a pixel a frame) is found: their steady motion is no burst")
    func cutBetweenPans() {
        let pictures = (0..<60).map { Self.picture(seed: $0 < 30 ? 1 : 2, dx: $0, frame: $0) }
        let found = Self.changes(pictures)
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .cut && abs($0.frame - 30) < 0.01 }, "found \(found)")
    }
}
