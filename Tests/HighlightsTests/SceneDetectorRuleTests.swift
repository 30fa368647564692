import Foundation
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import Highlights

/// The detector's rules on runs of 64 × 36 pictures built for them: a textured scene seen through a
/// window that a camera moves, so every step's size follows from how far the window moved, and
/// blends of two such scenes, so every frame's place in a dissolve follows from its α.
@Suite("Scene detector: rules on pictures built for them", .heavy)
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
        return Thumbnail(
            width: width, height: height, y: y, u: [UInt8](repeating: UInt8(100 + seed * 9 % 50), count: count),
            v: [UInt8](repeating: UInt8(140 - seed * 7 % 40), count: count))
    }

    static func blend(_ a: Thumbnail, _ b: Thumbnail, _ alpha: Double = 0.5) -> Thumbnail {
        func mix(_ p: [UInt8], _ q: [UInt8]) -> [UInt8] { zip(p, q).map { UInt8((Double($0) * (1 - alpha) + Double($1) * alpha).rounded()) } }
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

    /// Where the start of a run is judged from, once `pictures` are pushed into it.
    static func runStartJudgedFrom(_ pictures: [Thumbnail], burstsUpTo longest: Int = VideoScanner.Settings().longestStartBurst) -> Int? {
        let detector = SceneDetector(frameInterval: 1.0 / 30)
        detector.beginRun(baseline: 0)
        for (k, picture) in pictures.enumerated() { detector.push(time: Double(k) / 30, thumbnail: picture) }
        return detector.runStartJudgedFrom(burstsUpTo: longest)
    }

    /// A run whose window sweeps 16 pixels a frame (two of the scene's blocks: every step a cut's
    /// size) over its first `frames` steps, then stays still for `still` frames.
    static func sweepAtStart(frames: Int, still: Int = 20) -> [Thumbnail] {
        (0...frames).map { picture(seed: 1, dx: 16 * $0, frame: $0) } + (1...still).map { picture(seed: 1, dx: 16 * frames, frame: frames + $0) }
    }

    @Test(
        "A run that begins in a burst of motion has its start judged from the first frame after it; one that begins with a cut, or in a burst longer than half a second, from its first"
    )
    func runStartAfterBurst() {
        // Eight sweeping steps: the ninth frame is the first still one.
        #expect(Self.runStartJudgedFrom(Self.sweepAtStart(frames: 8)) == 9)
        // Three steps are a burst, two are not (one is a cut).
        #expect(Self.runStartJudgedFrom(Self.sweepAtStart(frames: SceneDetector.burstSteps)) == SceneDetector.burstSteps + 1)
        #expect(Self.runStartJudgedFrom(Self.sweepAtStart(frames: SceneDetector.burstSteps - 1)) == 0)
        let cut = [Self.picture(seed: 1, dx: 0, frame: 0)] + (1...20).map { Self.picture(seed: 2, dx: 0, frame: $0) }
        #expect(Self.runStartJudgedFrom(cut) == 0)
        // Still sweeping: not known yet, until the burst has outlasted the limit.
        #expect(Self.runStartJudgedFrom(Array(Self.sweepAtStart(frames: 20).prefix(10))) == nil)
        #expect(Self.runStartJudgedFrom(Self.sweepAtStart(frames: 20)) == 0)
        // Switched off: always the first frame.
        #expect(Self.runStartJudgedFrom(Self.sweepAtStart(frames: 8), burstsUpTo: 0) == 0)
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

    /// `sweep(frames:)` as a source of `rate` fps brought to 30 fps: each picture shown until the
    /// next one is due, so a 20 fps source repeats every third frame and a 15 fps one every second.
    static func sweep(frames: Int, rate: Int) -> [Thumbnail] {
        let pictures = sweep(frames: frames)
        return (0..<(pictures.count * 30 / rate)).map { pictures[$0 * rate / 30] }
    }

    @Test(
        "A quick pan in a slower source brought to 30 fps is not a cut: repeated frames say nothing about motion",
        arguments: [(3, 20), (4, 20), (5, 20), (3, 15), (5, 15)])
    func burstInRepeatedFrames(frames: Int, rate: Int) {
        let found = Self.changes(Self.sweep(frames: frames, rate: rate))
        #expect(found.isEmpty, "found \(found)")
    }

    @Test(
        "A cut between panning shots in a slower source brought to 30 fps is still the one cut found, on the first frame of the second shot",
        arguments: [20, 15])
    func cutInRepeatedFrames(rate: Int) {
        let shots = (0..<60).map { Self.picture(seed: $0 < 30 ? 1 : 2, dx: $0, frame: $0) }
        let pictures = (0..<(60 * 30 / rate)).map { shots[$0 * rate / 30] }
        let first = Double(pictures.firstIndex { $0.u == shots[30].u }!)
        let cuts = Self.changes(pictures).filter { $0.kind == .cut }
        #expect(cuts.count == 1 && cuts.allSatisfy { abs($0.frame - first) < 0.01 }, "cuts \(cuts), cut at \(first)")
    }

    @Test("A cut made over two frames (one blended frame between the shots) is one cut, on the blend or the frame after")
    func blendedCutIsACut() {
        let pictures =
            (0..<30).map { Self.picture(seed: 1, dx: 0, frame: $0) }
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

    /// A time-lapse of `frames` frames: each picture held `timeLapseHold` frames (grain and all),
    /// each new one the window moved 2 pixels on (a quarter of a block), so no step within the cut
    /// window's eight frames either side of a jump is more than a repeat; from frame `cutAt` (a
    /// jump) another scene.
    static let timeLapseHold = 14
    static func timeLapse(frames: Int, cutAt: Int? = nil) -> [Thumbnail] {
        (0..<frames).map { k in picture(seed: k >= cutAt ?? .max ? 2 : 1, dx: 2 * (k / timeLapseHold), frame: k / timeLapseHold) }
    }

    @Test(
        "A time-lapse's jumps, between repeated pictures, are no cuts: each is measured against the jumps either side; a cut among them, and a slideshow's cuts, are still found on their frames"
    )
    func timeLapseJumps() {
        let jumps = Self.changes(Self.timeLapse(frames: 140))
        #expect(jumps.isEmpty, "found \(jumps)")
        let cutAt = 5 * Self.timeLapseHold
        let cut = Self.changes(Self.timeLapse(frames: 140, cutAt: cutAt))
        #expect(cut.count == 1 && cut.allSatisfy { $0.kind == .cut && abs($0.frame - Double(cutAt)) < 0.01 }, "found \(cut)")
        // A slideshow: six stills of 20 frames each, every change a cut.
        let slide = 20, shown = 6 * slide
        let slides = Self.changes((0..<shown).map { Self.picture(seed: 20 + $0 / slide, dx: 0, frame: 0) })
        #expect(
            slides.map(\.frame) == stride(from: slide, to: shown, by: slide).map(Double.init) && slides.allSatisfy { $0.kind == .cut },
            "slideshow: found \(slides)")
        var settings = SceneDetector.Settings()
        settings.sparseStepReach = 0
        #expect(!Self.changes(Self.timeLapse(frames: 140), settings: settings).isEmpty, "the window alone (the fixture exercises the rule)")
    }

    /// A 60-frame dissolve (frames 40–100, middle 70) between two shots whose colours drift all
    /// the while (light changing: a unit of U and V every three frames), before, during and after it.
    static func dissolveBetweenDriftingShots() -> [Thumbnail] {
        func drifting(_ t: Thumbnail, _ k: Int) -> Thumbnail {
            Thumbnail(
                width: t.width, height: t.height, y: t.y, u: t.u.map { UInt8(min(255, Int($0) + k / 3)) },
                v: t.v.map { UInt8(max(0, Int($0) - k / 3)) })
        }
        return (0..<150).map { k in
            let a = drifting(picture(seed: 3, dx: 0, frame: k), k), b = drifting(picture(seed: 4, dx: 0, frame: k), k)
            return blend(a, b, min(1, max(0, Double(k - 40) / 60)))
        }
    }

    @Test(
        "A dissolve between shots that keep changing is placed on its middle: the ramp is fitted over every frame, not read where α leaves 0 and reaches 1"
    )
    func dissolveMiddleBetweenChangingShots() {
        let found = Self.changes(Self.dissolveBetweenDriftingShots())
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - 70) <= 1 }, "found \(found)")
    }

    /// A `length`-frame dissolve from frame 40 (60: frames 40–100, middle 70) from a shot that
    /// whip-pans as the blend begins (its window swept 120 pixels over the blend's first
    /// `whipFrames` frames) into a still shot, or from a still shot into one that pans on from
    /// frame 90 (a pixel and a half a frame, before the blend ends and after).
    static func dissolveWithMotion(outgoingWhips: Bool, length: Int = 60, whipFrames: Int = 8) -> [Thumbnail] {
        (0..<(length + 90)).map { k in
            let whip = outgoingWhips ? whipOffset(at: k, frames: whipFrames) : 0
            let pan = outgoingWhips ? 0 : 3 * max(0, k - 90) / 2
            return blend(
                picture(seed: 9, dx: whip, frame: k), picture(seed: 10, dx: pan, frame: k),
                min(1, max(0, Double(k - blendStart) / Double(length))))
        }
    }

    /// The frame `dissolveWithMotion`'s blend (and its whip) begins on.
    static let blendStart = 40

    /// The outgoing shot's window at frame `k`: swept 120 pixels over `frames` frames from `blendStart`.
    static func whipOffset(at k: Int, frames: Int) -> Int { 120 * min(frames, max(0, k - blendStart)) / frames }

    @Test(
        "A dissolve is placed on its middle when the outgoing shot whip-pans as it begins, or the incoming one pans as it ends: each end of the ramp is read from its own side",
        arguments: [true, false])
    func dissolveWithMotionIsPlaced(outgoingWhips: Bool) {
        let found = Self.changes(Self.dissolveWithMotion(outgoingWhips: outgoingWhips))
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - 70) <= 1 }, "found \(found)")
    }

    /// A 1.5 s dissolve (frames 40–85, middle 62.5) whose outgoing shot whip-pans over its first
    /// 6 to 14 frames (up to a third of the blend, more than its fit leaves out), after 40 still
    /// frames: every window after the whip has the whip in the frames just before it, which moved
    /// the picture more than the blend does, and was taken for a shot's own motion. Its motion is
    /// measured before the whip instead (missed before, whatever the whip's length). The same whip
    /// with no dissolve is no change.
    @Test(
        "A dissolve whose outgoing shot whip-pans over its first third is found on its middle: the shot's motion is measured before the whip; the whip alone is no change",
        arguments: [6, 8, 11, 14])
    func shortDissolveUnderWhipIsFound(whipFrames: Int) {
        let length = 45
        let pictures = Self.dissolveWithMotion(outgoingWhips: true, length: length, whipFrames: whipFrames)
        let middle = Double(Self.blendStart) + Double(length) / 2
        let found = Self.changes(pictures)
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - middle) <= 1 }, "found \(found)")
        let whipAlone = pictures.indices.map { Self.picture(seed: 9, dx: Self.whipOffset(at: $0, frames: whipFrames), frame: $0) }
        #expect(Self.changes(whipAlone).isEmpty, "whip alone: found \(Self.changes(whipAlone))")
    }

    /// A three-second dissolve (frames 40–130, middle 85) whose outgoing shot whip-pans over its
    /// first four or six frames: the whip jumps the frames' distance from the incoming shot at once,
    /// while the slow blend grows it by a third of a unit a frame after, so tracing the jump back
    /// at that pace would put the start up to ten frames early; it stops at the last frame still
    /// on the outgoing shot's course (placed 2.8 and 1.9 frames early without that).
    @Test(
        "A slow dissolve begun under a quick whip pan is placed on its middle: its start is not traced back past the last frame still on the outgoing shot's course",
        arguments: [4, 6])
    func slowDissolveUnderQuickWhipIsPlaced(whipFrames: Int) {
        let found = Self.changes(Self.dissolveWithMotion(outgoingWhips: true, length: 90, whipFrames: whipFrames))
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - 85) <= 1 }, "found \(found)")
    }

    /// `picture` shimmering: each 4 × 4 block's luma moved by up to ±`amount`, anew every frame
    /// (water, leaves, a sensor in low light), so no frame is an exact blend of two others.
    static func shimmering(_ picture: Thumbnail, frame: Int, amount: Int = 8) -> Thumbnail {
        var y = picture.y
        for row in 0..<picture.height {
            for col in 0..<picture.width {
                let offset = Int(hash(frame, col / 4, row / 4, 7) % UInt64(2 * amount + 1)) - amount
                y[row * picture.width + col] = UInt8(max(0, min(255, Int(y[row * picture.width + col]) + offset)))
            }
        }
        return Thumbnail(width: picture.width, height: picture.height, y: y, u: picture.u, v: picture.v)
    }

    /// A shimmering shot (scene 11) and one much like it (four tenths of the way to scene 12) whose
    /// window is swept 120 pixels over frames 52–58 (a whip pan); with `dissolving`, a 30-frame
    /// dissolve from the first into the second over frames 40–70 (middle 55), the whip halfway
    /// through it; without, the second shot alone.
    static func whipOnShimmer(dissolving: Bool) -> [Thumbnail] {
        (0..<120).map { k in
            let still = picture(seed: 11, dx: 0, frame: k)
            let whipping = blend(still, picture(seed: 12, dx: 120 * min(6, max(0, k - 52)) / 6, frame: k), 0.4)
            return shimmering(dissolving ? blend(still, whipping, min(1, max(0, Double(k - 40) / 30))) : whipping, frame: k)
        }
    }

    @Test(
        "A dissolve into a shot that whip-pans halfway through it is found, on its middle: the few frames the whip breaks are left out of the blend's fit, and without that it is missed"
    )
    func dissolveIntoWhipIsFound() {
        let found = Self.changes(Self.whipOnShimmer(dissolving: true))
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - 55) <= 2 }, "found \(found)")
        var settings = SceneDetector.Settings()
        settings.blendTrimShare = 0
        let untrimmed = Self.changes(Self.whipOnShimmer(dissolving: true), settings: settings)
        #expect(!untrimmed.contains { $0.kind == .dissolve }, "found \(untrimmed)")
    }

    @Test("The same shimmering shot whip-panning, with no dissolve, is no change: leaving out the worst frames does not make a whip a blend")
    func whipOnShimmerIsNoChange() {
        let found = Self.changes(Self.whipOnShimmer(dissolving: false))
        #expect(found.isEmpty, "found \(found)")
    }

    /// A 90-frame dissolve from frame 30 on: each frame moves a ninetieth of the way.
    static func slowDissolve(frame k: Int) -> Thumbnail {
        blend(picture(seed: 5, dx: 0, frame: k), picture(seed: 6, dx: 0, frame: k), min(1, max(0, Double(k - 30) / 90)))
    }

    @Test("A slow dissolve, too slow to tell over ten frames, is told over twenty: followed into the next GOP, and seen to have begun before a run")
    func slowDissolveIsFollowed() {
        let span = SceneDetector.difference(Self.slowDissolve(frame: 30), Self.slowDissolve(frame: 120))
        let detector = SceneDetector(frameInterval: 1.0 / 30)
        // The run reaches 10 and then 25 frames into the dissolve.
        detector.beginRun(baseline: 0)
        for k in 0...40 { detector.push(time: Double(k) / 30, thumbnail: Self.slowDissolve(frame: k)) }
        let tenFramesIn = detector.isFollowingChange
        for k in 41...55 { detector.push(time: Double(k) / 30, thumbnail: Self.slowDissolve(frame: k)) }
        #expect(
            !tenFramesIn && detector.isFollowingChange,
            "span \(span): followed after 10 frames \(tenFramesIn), after 25 \(detector.isFollowingChange)")

        // A run that begins 30 frames into it.
        let later = SceneDetector(frameInterval: 1.0 / 30)
        later.beginRun(baseline: 0)
        for k in 60..<90 { later.push(time: Double(k) / 30, thumbnail: Self.slowDissolve(frame: k)) }
        #expect(
            !later.runBeganMidChange(over: SceneDetector.startFrames) && later.startBlendsSlowly()
                && later.runBeganMidChange(over: SceneDetector.slowStartFrames),
            "drift over the first frames \(later.startBlendDrift(over: SceneDetector.startFrames)), over more \(later.startBlendDrift(over: SceneDetector.slowStartFrames))"
        )
    }

    /// A fade through black out of a flickering shot (its brightness jumping by up to ±24 every
    /// frame, as old film or a failing light does) into a steady one: out over frames 40–52,
    /// black until 60, in over 60–72, so its middle is frame 56.
    static func fadeOutOfFlicker() -> [Thumbnail] {
        (0..<110).map { k in
            let level = k <= 40 ? 1 : k < 52 ? Double(52 - k) / 12 : k < 60 ? 0 : k < 72 ? Double(k - 60) / 12 : 1
            let flicker = k < 60 ? Int(hash(99, k) % 49) - 24 : 0
            let t = picture(seed: k < 60 ? 7 : 8, dx: 0, frame: k)
            // Black is Y 16, U and V 128: a fade scales the picture's distance from it.
            func faded(_ plane: [UInt8], black: Int, offset: Int = 0) -> [UInt8] {
                plane.map { UInt8(max(0, min(255, black + Int((Double(Int($0) + offset - black) * level).rounded())))) }
            }
            return Thumbnail(
                width: t.width, height: t.height, y: faded(t.y, black: 16, offset: flicker),
                u: faded(t.u, black: 128), v: faded(t.v, black: 128))
        }
    }

    @Test(
        "A fade to black out of a flickering shot is placed on its middle: its ramp is followed by the contrast falling, where the brightness jumps both ways"
    )
    func fadeOutOfFlickerIsPlaced() {
        let found = Self.changes(Self.fadeOutOfFlicker())
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .fade && abs($0.frame - 56) <= 1 }, "found \(found)")
    }

    /// A street before a fixed camera, in a 10 fps source brought to 30 fps: scene 5 with four
    /// people (2 × 10 pixels, 60 darker than what is behind them) walking `speed` pixels a source
    /// frame, two each way, drawn with their edges' coverage, so a source frame moves only their
    /// edges, and a little. From frame `jump` on the footage is `skip` source frames later (a jump
    /// cut: everyone elsewhere, the street as it was). From frame `lamp` on a lamp lights a pool of
    /// the street (16 × 12 pixels, 50 brighter).
    static func street(frames: Int = 150, jump: Int? = nil, skip: Int = 40, lamp: Int? = nil, speed: Double = 0.36) -> [Thumbnail] {
        let scene = picture(seed: 5, dx: 0, frame: 0)
        let people: [(x: Double, row: Int, direction: Double)] = [(4, 4, 1), (14, 20, 1), (58, 10, -1), (46, 24, -1)]
        return (0..<frames).map { k in
            let sourceFrame = Double(k / 3 + (jump.map { k >= $0 ? skip : 0 } ?? 0))
            var y = scene.y.map(Double.init)
            for person in people {
                let left = person.x + person.direction * speed * sourceFrame
                for col in 0..<width {
                    // The share of this column the person covers.
                    let cover = max(0, min(Double(col + 1), left + 2) - max(Double(col), left))
                    guard cover > 0 else { continue }
                    for row in person.row..<(person.row + 10) { y[row * width + col] -= 60 * cover }
                }
            }
            if let lamp, k >= lamp {
                for row in 20..<32 { for col in 40..<56 { y[row * width + col] += 50 } }
            }
            return Thumbnail(width: width, height: height, y: y.map { UInt8(max(0, min(255, $0.rounded()))) }, u: scene.u, v: scene.v)
        }
    }

    @Test(
        "A jump cut before a fixed camera is a cut: the people are elsewhere, the street is as it was, so only the blocks they leave and reach change"
    )
    func streetJumpCut() {
        let found = Self.changes(Self.street(jump: 75))
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .cut && abs($0.frame - 75) < 0.01 }, "found \(found)")
    }

    @Test("Without the local rule the same jump cut is missed: its step over the whole picture is small (the fixture exercises the rule)")
    func streetJumpCutNeedsTheRule() {
        var settings = SceneDetector.Settings()
        settings.minimumLocalCut = .infinity
        let found = Self.changes(Self.street(jump: 75), settings: settings)
        #expect(found.isEmpty, "found \(found)")
    }

    @Test("People walking before a fixed camera, in a slower source's steps, are no cut")
    func streetWalkingIsNoCut() {
        let found = Self.changes(Self.street())
        #expect(found.isEmpty, "found \(found)")
    }

    @Test(
        "A lamp lit in a still street (a pool of the picture brightens in one frame) is no cut, and is taken for one when the brightness is not looked at"
    )
    func streetLampIsNoCut() {
        let found = Self.changes(Self.street(lamp: 75))
        #expect(found.isEmpty, "found \(found)")
        var settings = SceneDetector.Settings()
        settings.localCutLumaShift = .infinity
        let unguarded = Self.changes(Self.street(lamp: 75), settings: settings)
        #expect(unguarded.count == 1 && unguarded.allSatisfy { $0.kind == .cut && abs($0.frame - 75) < 0.01 }, "found \(unguarded)")
    }

    /// `picture` in a dimmer light: at `level` 1 the luma is 100 lower, cut off at black (the
    /// shadows' detail lost), and the colours 8 further each from where they were (as an HDR
    /// picture's shift when its light changes); at 0 it is as it was.
    static func dimmed(_ picture: Thumbnail, _ level: Double) -> Thumbnail {
        func shifted(_ plane: [UInt8], _ by: Double) -> [UInt8] { plane.map { UInt8(max(0, min(255, (Double($0) + by).rounded()))) } }
        return Thumbnail(
            width: picture.width, height: picture.height, y: shifted(picture.y, -100 * level),
            u: shifted(picture.u, -8 * level), v: shifted(picture.v, 8 * level))
    }

    /// `pictures` dimmed over `dim` and lit up again over the two frames after it (half, then whole).
    static func relit(_ pictures: [Thumbnail], dim: Range<Int>) -> [Thumbnail] {
        pictures.enumerated().map { k, picture in dimmed(picture, dim.contains(k) ? 1 : k == dim.upperBound ? 0.5 : 0) }
    }

    @Test(
        "A light switched on over two frames in a still shot (everything brighter, the shadows crushed before, the colours shifted) is no cut, and is taken for one when the order of neighbouring pixels is not looked at"
    )
    func lightSwitchedOnIsNoCut() {
        let pictures = Self.relit((0..<150).map { Self.picture(seed: 5, dx: 0, frame: $0) }, dim: 0..<75)
        let found = Self.changes(pictures)
        #expect(found.isEmpty, "found \(found)")
        var settings = SceneDetector.Settings()
        settings.relitChanges = 0
        let unguarded = Self.changes(pictures, settings: settings)
        #expect(unguarded.count == 1 && unguarded.allSatisfy { $0.kind == .cut && abs($0.frame - 75.5) <= 0.5 }, "found \(unguarded)")
    }

    /// `street(jump:)` seen by a hand-held camera that jolts as the people jump: from that frame on
    /// the fine texture of the whole picture is seen from elsewhere (a pattern of ±`texture` levels
    /// over every pixel), so every block changes a little and the people's blocks a lot.
    static func joltedStreet(jump: Int, texture: Int) -> [Thumbnail] {
        street(jump: jump).enumerated().map { k, picture in
            guard k >= jump else { return picture }
            var y = picture.y
            for i in y.indices {
                let offset = Int(hash(99, i) % UInt64(2 * texture + 1)) - texture
                y[i] = UInt8(max(0, min(255, Int(y[i]) + offset)))
            }
            return Thumbnail(width: picture.width, height: picture.height, y: y, u: picture.u, v: picture.v)
        }
    }

    @Test(
        "The people leaping while the whole picture moves a little (a hand-held camera's jolt) are no fixed camera's jump cut: the rest of the picture did not stay; with the rest left unlooked at, the same step is taken for one"
    )
    func joltIsNoLocalCut() {
        let found = Self.changes(Self.joltedStreet(jump: 75, texture: 8))
        #expect(found.isEmpty, "found \(found)")
        var settings = SceneDetector.Settings()
        settings.localCutRestShare = .infinity
        let unguarded = Self.changes(Self.joltedStreet(jump: 75, texture: 8), settings: settings)
        #expect(unguarded.count == 1 && unguarded.allSatisfy { $0.kind == .cut && abs($0.frame - 75) < 0.01 }, "found \(unguarded)")
        // A jolt too slight to move the rest as much as a tenth of the people's blocks leaves the jump cut found.
        let slight = Self.changes(Self.joltedStreet(jump: 75, texture: 1))
        #expect(slight.count == 1 && slight.allSatisfy { $0.kind == .cut && abs($0.frame - 75) < 0.01 }, "found \(slight)")
    }

    @Test("A jump cut that dims the street as it comes (everyone elsewhere, the light lower) is still a cut; the light coming back is none")
    func jumpCutIntoDimmerLightIsACut() {
        let found = Self.changes(Self.relit(Self.street(jump: 60), dim: 60..<110))
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .cut && abs($0.frame - 60) < 0.01 }, "found \(found)")
    }
}

extension SceneDetectorRuleTests {
    /// A 60-frame dissolve (frames 30–90, its middle at 60) into a scene 80 levels brighter, whose
    /// light clips at 200 (an HDR source's highlights, clipped by the analysis's tone mapping): a
    /// pixel stops changing once its blend reaches the clip, so the frames' distance from the
    /// outgoing shot bends from about two thirds of the way on and levels only at the end.
    static func clippedDissolve() -> [Thumbnail] {
        (0..<130).map { k in
            let alpha = min(1, max(0, Double(k - 30) / 60))
            let a = picture(seed: 5, dx: 0, frame: k), b = picture(seed: 6, dx: 0, frame: k)
            let y = zip(a.y, b.y).map { UInt8(min(200, (Double($0) * (1 - alpha) + (Double($1) + 80) * alpha).rounded())) }
            let mixed = blend(a, b, alpha)
            return Thumbnail(width: a.width, height: a.height, y: y, u: mixed.u, v: mixed.v)
        }
    }

    @Test(
        "A dissolve whose blend slows into its end (highlights clipped) is placed on its middle: its end is where the frames settle, not where their rise first bends"
    )
    func clippedDissolveIsPlaced() {
        let found = Self.changes(Self.clippedDissolve())
        #expect(found.count == 1 && found.allSatisfy { $0.kind == .dissolve && abs($0.frame - 60) <= 2 }, "found \(found)")
        var atKnee = SceneDetector.Settings()
        atKnee.endsWhereBlendSettles = false
        let early = Self.changes(Self.clippedDissolve(), settings: atKnee)
        #expect(!early.allSatisfy { $0.kind == .dissolve && abs($0.frame - 60) <= 2 }, "ended at the knee: \(early) (the fixture exercises the rule)")
    }
}
