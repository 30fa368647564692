import Foundation
import MomentsSupport

/// How one shot gives way to the next.
public enum TransitionKind: String, Sendable, Codable { case cut, dissolve, fade }

/// A detected scene change. `time` is where the new shot begins (for gradual transitions, the middle).
public struct SceneChange: Sendable, Codable, Equatable {
    public var time: Double
    public var kind: TransitionKind
    /// The stretch that belongs to neither shot (empty for a hard cut).
    public var transitionStart: Double
    public var transitionEnd: Double
    /// Content difference across the change (0…255 scale).
    public var strength: Double

    enum CodingKeys: String, CodingKey {
        case time, kind, transitionStart = "transition_start", transitionEnd = "transition_end", strength
    }

    /// Whether the change spans `time` or lies within `slack` seconds of it.
    func covers(_ time: Double, within slack: Double) -> Bool {
        transitionStart - slack <= time && time <= transitionEnd + slack
    }
}

/// Finds scene changes in runs of consecutive decoded frames (in display order).
///
/// Frames are compared by *structure and colour*: the luma of each thumbnail normalised to zero
/// mean and unit contrast (so flicker, a light switched on or an exposure change moves nothing),
/// plus the chroma. On that difference:
///
/// * **Cuts**: a step well above an absolute floor and several times the median step around it
///   (repeated frames left out), the window long enough that a shaky, zooming or whip-panning
///   shot raises its own median; a smaller step counts where the shot around it is still (a jump
///   cut), and in a still shot one whose change is confined to a few blocks that change far more
///   than the shot's own motion moves them (a fixed camera's jump cut: the people elsewhere, the
///   street as it was). A step the picture takes back within five frames is a flash, not a cut;
///   one after which every edge still runs the same way (neighbouring pixels keep their order of
///   brightness) is a light switched on or an exposure change, not a cut.
/// * **Dissolves**: a window of 8–91 frames whose ends are different shots, with no single step
///   carrying the change, whose every frame is the blend `a + α(b − a)` of its ends (checked on
///   4 × 4 blocks, so motion inside a shot, which moves content rather than blending it, fails)
///   with α rising linearly. Of overlapping windows the longest wins; its ramp gives the middle.
/// * **Fades**: a stretch of black (or white) frames under two seconds, with the ramps into and
///   out of it, between two different pictures.
final class SceneDetector {
    struct Settings {
        /// A cut's step (the structure-and-colour difference) and its multiple of the median step around.
        var minimumCut = 25.0
        var cutRatio = 3.0
        /// Where the shot around is still, a smaller step is a cut (a jump cut of a fixed camera).
        var minimumStillCut = 12.0
        var stillCutRatio = 8.0
        /// In a shot this still (the median step around), a step of this size and ratio to that
        /// median whose largest block changes (`localStep`) reach `minimumLocalCut` and the ratio to
        /// the shot's own is a cut too (a fixed camera's jump cut), unless the luma mean moved this much.
        var localCutStillness = 1.0
        var minimumLocalCutStep = 1.5
        var localCutStepRatio = 3.0
        var minimumLocalCut = 8.0
        var localCutRatio = 3.0
        var localCutLumaShift = 3.0
        /// …and only where the rest stays: the median block changed at most this share of what the
        /// most changed blocks did (a fixed camera's street; not a dissolve's blend or a hand-held
        /// shot's shake, which move every block).
        var localCutRestShare = 0.1
        /// A step that keeps the order of neighbouring pixels' brightness (the share of pairs
        /// whose order changed, `orderChanges`, over the whole picture and in the 8 × 8 blocks that
        /// changed most, below these) is the same picture in another light, not a cut.
        var relitChanges = 0.03
        var relitBlockChanges = 0.08
        /// A step between pictures whose sharpness differs by this ratio is checked for a change of focus.
        var sharpeningRatio = 1.5
        /// A step with two neighbours (of the four within two frames) this share of it or more is
        /// part of a burst of motion, not a cut.
        var burstShare = 0.5
        /// Frames either side of a step whose steps make its median.
        var cutWindow = 8
        /// Where fewer than three of those steps are no repeated frame, the nearest two such steps
        /// beyond them on each side within this many frames, each smaller than any cut, give the median.
        var sparseStepReach = 30
        /// A step undone within this many frames is a flash.
        var flashFrames = 5
        /// Dissolve windows, in frames (the longest spans a three-second dissolve and the frames either side).
        var dissolveLengths = [8, 10, 12, 15, 20, 25, 30, 40, 50, 61, 75, 91]
        /// A dissolve's ends must differ by this much…
        var minimumGradualSpan = 30.0
        /// …and its frames be blends of the ends: residual per unit of change, and α's largest
        /// departure from a straight line.
        var maximumBlendResidual = 0.13
        var maximumBlendBend = 0.2
        /// …leaving out of the residual, in windows of this many frames or more, this share of
        /// their frames that fit worst (a whip pan or a zoom in one shot, a few frames of a long blend).
        var blendTrimFrames = 30
        var blendTrimShare = 0.15
        /// …and differ by this many times the change over as many frames before the window.
        var dissolveMotionRatio = 1.5
        var darkLuma = 30.0
        var brightLuma = 215.0
        /// A white frame is flat: its luma varies by less than this.
        var flatLuma = 12.0
        /// A fade's black or white stretch lasts less than this (seconds); its ramps at most `fadeRampFrames`.
        var maximumFadeHold = 2.0
        var fadeRampFrames = 45
        /// A dissolve whose frames rise on past the knee of their distance from the outgoing shot
        /// into a flat level ends where they reach it (false: at the knee; see `rampEnd`).
        var endsWhereBlendSettles = true
    }

    struct Entry {
        let time: Double
        /// Luma normalised to zero mean and unit contrast.
        let structure: [Float]
        let u: [UInt8]
        let v: [UInt8]
        /// 4 × 4-pixel block means of Y, U and V, for the blend test.
        let blocks: [Float]
        let luma: Double
        let lumaSpread: Double
        /// The thumbnail's width, to read `structure` as a picture.
        let width: Int
        /// Difference from the previous frame of the run (0 for its first).
        var step: Double
    }

    /// Overlapping dissolve windows: the entries they cover and the best of them.
    struct DissolveGroup {
        var first: Int
        var last: Int
        /// The change the best window (the longest, then the best fit) makes.
        var change: SceneChange
        var length: Int
        var residual: Double
        /// Whether its windows passed the motion test only against the shot's motion before a burst
        /// of it (a zoom or a whip pan just before them): a window that passes it outright replaces them.
        var afterBurst: Bool

        mutating func shift(by removed: Int) {
            first -= removed
            last -= removed
        }
    }

    struct Candidate {
        var change: SceneChange
        /// Gradual changes outrank cuts; fades outrank dissolves.
        var rank: Int
    }

    let settings: Settings
    var entries: [Entry] = []
    /// The next entry whose step is judged as a cut (judged once `cutWindow` frames follow it).
    var next = 1
    var candidates: [Candidate] = []
    /// The overlapping dissolve windows being followed.
    var dissolveGroup: DissolveGroup?
    /// A black or white stretch being followed: its first and last entry, whether it is dark, and
    /// whether it is still short enough to be part of a fade.
    var extreme: (first: Int, last: Int, dark: Bool, short: Bool)?
    /// A stretch that ended, waiting for the ramp out of it to end.
    var pendingFade: (rampStart: Int, first: Int, last: Int, dark: Bool)?
    /// How many candidates there were when the run began (nil once entries were trimmed: too late to discard).
    var runStartCandidates: Int?
    /// Typical step just before this run (from the sparse samples), while the run is short.
    var baselineHint = 0.0

    /// `frameInterval`: the video's nominal seconds per frame. Frame counts in `settings` are for
    /// 24–30 fps and double at 50–60 fps, so a two-second dissolve is followed at 60 fps too. Other
    /// nominal rates are left as they are: a variable-rate file's is a time base, not a frame rate.
    init(frameInterval: Double = 1.0 / 30, settings: Settings = Settings()) {
        var scaled = settings
        let rate = frameInterval > 0 && frameInterval.isFinite ? 1 / frameInterval : 30
        let factor = (45.0...65.0).contains(rate) ? 2.0 : 1
        func scale(_ frames: Int) -> Int { max(1, Int((Double(frames) * factor).rounded())) }
        scaled.cutWindow = scale(settings.cutWindow)
        scaled.flashFrames = scale(settings.flashFrames)
        scaled.fadeRampFrames = scale(settings.fadeRampFrames)
        scaled.dissolveLengths = settings.dissolveLengths.map { max(4, scale($0)) }
        scaled.blendTrimFrames = scale(settings.blendTrimFrames)
        self.settings = scaled
    }

    /// Every change found, each kept once: a gradual change absorbs the cuts inside it, and of
    /// changes closer than 0.4 s the gradual one, else the stronger one, stays.
    var changes: [SceneChange] {
        // Overlapping gradual changes: the higher rank, then the stronger, stays.
        var gradual: [Candidate] = []
        for c in candidates.filter({ $0.rank > 0 }).sorted(by: { $0.change.time < $1.change.time }) {
            if let last = gradual.last, c.change.transitionStart <= last.change.transitionEnd {
                if (c.rank, c.change.strength) > (last.rank, last.change.strength) { gradual[gradual.count - 1] = c }
                continue
            }
            gradual.append(c)
        }
        let slack = 0.07
        let cuts = candidates.filter { c in
            c.rank == 0 && !gradual.contains { $0.change.covers(c.change.time, within: slack) }
        }
        var result: [Candidate] = []
        for c in (gradual + cuts).sorted(by: { $0.change.time < $1.change.time }) {
            if let last = result.last, c.change.time - last.change.time < 0.4 {
                if (c.rank, c.change.strength) > (last.rank, last.change.strength) { result[result.count - 1] = c }
                continue
            }
            result.append(c)
        }
        return result.map(\.change)
    }

    /// Whether a gradual change may still be going on at the last frame pushed: a dissolve window
    /// ending there, a black or white stretch or its ramp, or the start of one (the last frames blend). The
    /// scanner then decodes the next GOP too, so the change is measured whole.
    var isFollowingChange: Bool {
        let last = entries.count - 1
        guard last >= 1 else { return false }
        if let group = dissolveGroup, group.last >= last - 2 { return true }
        if extreme?.short == true || pendingFade != nil { return true }
        // The last third of a second, or (a slow dissolve, whose frames change little each) the
        // last two thirds.
        return [max(0, last - 10), last - 20].contains { back in
            back >= 0 && blendDrift(from: back, to: last, atLeast: 0.5 * settings.minimumGradualSpan) > 0
        }
    }

    /// Whether a gradual change the detector holds is under way at the last frame pushed (a
    /// dissolve window ending there, a black or white stretch or its ramp), not only a blend-like
    /// drift of the last frames, which a slow pan over smooth ground is too.
    var isHoldingChange: Bool {
        if let group = dissolveGroup, group.last >= entries.count - 3 { return true }
        return extreme?.short == true || pendingFade != nil
    }

    /// How far frames `a` to `b` moved when they blend steadily from one picture towards another
    /// (no single step carries half of it, every frame a blend of the ends): 0 when they do not,
    /// or when they moved less than `minimum`.
    func blendDrift(from a: Int, to b: Int, atLeast minimum: Double = 0) -> Double {
        let drift = Self.difference(entries[a], entries[b])
        guard drift > 0, drift >= minimum, !entries[(a + 1)...b].contains(where: { $0.step > 0.5 * drift }),
            blendFit(from: a, to: b) != nil
        else { return 0 }
        return drift
    }

    /// Whether the run could end at the last frame pushed and lose nothing: every step large enough
    /// to be a cut has been judged with its frames on both sides, and no gradual change is under way.
    var isSettled: Bool {
        guard entries.count > settings.cutWindow, extreme == nil, pendingFade == nil, !hasUnjudgedCutStep else { return false }
        return !isFollowingChange
    }

    /// The step from the run's last frame to `sample`, a frame after it (0 when there is none).
    func step(to sample: VideoSample) -> Double {
        guard let last = entries.last, last.time < sample.time else { return 0 }
        return Self.difference(last, Self.entry(time: sample.time, thumbnail: sample.thumbnail))
    }

    /// Whether a step of a still shot's cut size is still to be judged.
    var hasUnjudgedCutStep: Bool { next < entries.count && entries[next...].contains(where: { $0.step >= settings.minimumStillCut }) }

    /// Frames pushed since the run began (or since the oldest kept one).
    var runLength: Int { entries.count }

    /// Changes found so far, a dissolve still being followed included.
    var changeCount: Int { candidates.count + (dissolveGroup == nil ? 0 : 1) }

    /// A run's start is judged over its first `startFrames` frames, and over `slowStartFrames`
    /// when those blend a little (`startBlendsSlowly`).
    static let startFrames = 6, slowStartFrames = 20

    /// Steps of a still shot's cut size in a row that make a burst of motion (one is a cut).
    static let burstSteps = 3

    /// The frame the run's start is judged from: its first, or where it begins inside a burst of
    /// motion (a whip pan or a zoom under way at its first frame: its first `burstSteps` steps or
    /// more each at least a still shot's cut), the first frame after the burst, since a blend
    /// under way shows only once the motion stops. Nil while that is not known yet; the first
    /// frame again when the burst goes on past `longest` frames.
    func runStartJudgedFrom(burstsUpTo longest: Int) -> Int? {
        let calm = entries.indices.dropFirst().first { entries[$0].step < settings.minimumStillCut }
        guard let calm else { return entries.count > longest ? 0 : nil }
        return calm > Self.burstSteps && calm <= longest ? calm : 0
    }

    /// Whether the run's `frames` frames from `from` (`runStartJudgedFrom`) were already blending
    /// towards another picture (a dissolve or fade that began before the run).
    func runBeganMidChange(from: Int = 0, over frames: Int) -> Bool {
        guard runStartCandidates != nil, entries.count > from + frames + 2 else { return false }
        if entries[0].luma < settings.darkLuma || isExtreme(entries[0], dark: false) { return true }
        return startBlendDrift(from: from, over: frames) >= 0.3 * settings.minimumGradualSpan
    }

    /// Whether the run's first frames (from `from`) move a little, and as a blend: perhaps a slow
    /// dissolve, whose frames change little each, to be told over more frames.
    func startBlendsSlowly(from: Int = 0) -> Bool { startBlendDrift(from: from, over: Self.startFrames) >= 0.1 * settings.minimumGradualSpan }

    /// How far the run's `frames` frames from `from` moved when they blend steadily from one
    /// picture towards another (0 when they do not).
    func startBlendDrift(from: Int = 0, over frames: Int) -> Double {
        guard runStartCandidates != nil, entries.count > from + frames else { return 0 }
        return blendDrift(from: from, to: from + frames)
    }

    /// Whether one step of the run so far stands alone: at least `minimum` and three times every other.
    func hasLoneStep(atLeast minimum: Double) -> Bool {
        let steps = entries.dropFirst().map(\.step).sorted(by: >)
        guard let top = steps.first, top >= minimum else { return false }
        return steps.count < 2 || top >= 3 * steps[1]
    }

    /// Forgets the current run and what it found, to run it again from an earlier frame.
    func discardRun() {
        if let count = runStartCandidates { candidates.removeSubrange(count...) }
        entries.removeAll()
        next = 1
        extreme = nil
        pendingFade = nil
        dissolveGroup = nil
    }

    /// The usual step over the run's last frames (repeated ones included, as a sample run's
    /// activity counts them): the baseline for a run begun again further on in the same shot.
    var recentBaseline: Double {
        let steps = entries.dropFirst().suffix(2 * settings.cutWindow).map(\.step)
        return steps.count >= 3 ? Self.median(steps) : baselineHint
    }

    /// Starts a run of consecutive frames; `baseline` is the usual frame-to-frame difference there.
    func beginRun(baseline: Double) {
        baselineHint = baseline
        runStartCandidates = candidates.count
    }

    func push(time: Double, thumbnail: Thumbnail) {
        var entry = Self.entry(time: time, thumbnail: thumbnail)
        if let last = entries.last { entry.step = Self.difference(last, entry) }
        entries.append(entry)
        let b = entries.count - 1
        followExtremes(at: b)
        findDissolves(endingAt: b)
        while isReadyToJudge(next) {
            judgeCut(next)
            next += 1
        }
        trim()
    }

    /// Whether entry `i`'s step can be judged with the frames pushed so far: `cutWindow` frames
    /// follow it, and `sparseStepReach` where it is a cut candidate whose window holds fewer than
    /// three steps that are no repeated frame (the median is then read beyond the window).
    func isReadyToJudge(_ i: Int) -> Bool {
        guard i + settings.cutWindow < entries.count else { return false }
        return i + settings.sparseStepReach < entries.count || entries[i].step < candidateFloor || movingSteps(around: i).count >= 3
    }

    /// Ends the current run (the next frame pushed is not adjacent to the last).
    func endRun() {
        while next < entries.count {
            judgeCut(next)
            next += 1
        }
        closeDissolveGroup()
        if let pending = pendingFade { closeFade(pending, rampEnd: entries.count - 1) }
        entries.removeAll()
        next = 1
        extreme = nil
        pendingFade = nil
    }

    /// Records a cut found without decoding the frames around it (the encoder put a keyframe on it).
    func addKeyframeCut(time: Double, strength: Double) {
        candidates.append(
            Candidate(
                change: SceneChange(
                    time: time, kind: .cut, transitionStart: time, transitionEnd: time,
                    strength: strength), rank: 0))
    }

    // MARK: Features

    static func entry(time: Double, thumbnail t: Thumbnail) -> Entry {
        let n = max(1, t.pixelCount)
        var sum = 0.0, squares = 0.0
        for value in t.y {
            let d = Double(value)
            sum += d
            squares += d * d
        }
        let mean = sum / Double(n)
        let spread = (max(0, squares / Double(n) - mean * mean)).squareRoot()
        let scale = Float(1 / (spread + 4))
        let structure = t.y.map { (Float($0) - Float(mean)) * scale }
        let bw = t.width / 4, bh = t.height / 4
        var blocks = [Float](repeating: 0, count: 3 * bw * bh)
        for row in 0..<(bh * 4) {
            for col in 0..<(bw * 4) {
                let i = row * t.width + col, cell = (row / 4) * bw + col / 4
                blocks[cell] += Float(t.y[i])
                blocks[bw * bh + cell] += Float(t.u[i])
                blocks[2 * bw * bh + cell] += Float(t.v[i])
            }
        }
        // Luma blocks around their mean, so a flickering or brightening shot still blends.
        let blockMean = blocks[0..<(bw * bh)].reduce(0, +) / Float(max(1, 16 * bw * bh))
        for k in blocks.indices { blocks[k] = blocks[k] / 16 - (k < bw * bh ? blockMean : 0) }
        return Entry(
            time: time, structure: structure, u: t.u, v: t.v, blocks: blocks, luma: mean, lumaSpread: spread,
            width: t.width, step: 0)
    }

    /// Structure (normalised luma, weighted to the scale of a colour difference) plus chroma: a
    /// cut between unrelated shots scores 40 or more, a steady shot a few units, a change of
    /// brightness alone nearly nothing.
    static func difference(_ a: Entry, _ b: Entry) -> Double {
        let n = a.structure.count
        guard n == b.structure.count, n > 0 else { return 255 }
        var structure: Float = 0
        var colour = 0
        for i in 0..<n {
            structure += abs(a.structure[i] - b.structure[i])
            colour += abs(Int(a.u[i]) - Int(b.u[i])) + abs(Int(a.v[i]) - Int(b.v[i]))
        }
        return (Double(structureWeight) * Double(structure) + Double(colour)) / Double(n)
    }

    /// How much a unit of normalised luma counts against a code value of chroma in `difference`
    /// and `localStep`.
    static let structureWeight: Float = 40

    /// The structure-and-colour difference over the blocks that changed most: the 95th percentile
    /// of the 4 × 4-pixel blocks' mean differences, so things that moved in a still picture count
    /// at full strength however small a part of it they are.
    static func localStep(_ a: Entry, _ b: Entry) -> Double {
        blockSteps(a, b, percentiles: [95])[0]
    }

    /// The given percentiles of the 4 × 4-pixel blocks' mean structure-and-colour differences.
    static func blockSteps(_ a: Entry, _ b: Entry, percentiles: [Int]) -> [Double] {
        let w = a.width, h = a.structure.count / max(1, w)
        let bw = w / 4, bh = h / 4
        guard a.structure.count == b.structure.count, bw > 0, bh > 0 else { return percentiles.map { _ in 255 } }
        var blocks = [Float](repeating: 0, count: bw * bh)
        for row in 0..<(bh * 4) {
            for col in 0..<(bw * 4) {
                let k = row * w + col
                blocks[(row / 4) * bw + col / 4] +=
                    structureWeight * abs(a.structure[k] - b.structure[k])
                    + Float(abs(Int(a.u[k]) - Int(b.u[k])) + abs(Int(a.v[k]) - Int(b.v[k])))
            }
        }
        blocks.sort()
        return percentiles.map { Double(blocks[min(blocks.count - 1, blocks.count * $0 / 100)]) / 16 }
    }

    /// The structure-and-colour difference of two thumbnails (as between consecutive frames).
    static func difference(_ a: Thumbnail, _ b: Thumbnail) -> Double {
        difference(entry(time: 0, thumbnail: a), entry(time: 0, thumbnail: b))
    }

    /// Mean difference of two colour layouts (`Thumbnail.signature`), 0…255.
    static func layoutDistance(_ a: [Float], _ b: [Float]) -> Double {
        zip(a, b).reduce(0.0) { $0 + Double(abs($1.0 - $1.1)) } / Double(max(1, a.count))
    }

    // MARK: Memory

    /// Keeps the frames the judgements still need: the cut window behind `next`, the longest
    /// dissolve window, and any black stretch and its ramps; at most a few seconds of thumbnails.
    private func trim() {
        let longest = settings.dissolveLengths.max() ?? 60
        let removable = [
            next - settings.cutWindow - settings.flashFrames - 1,
            // A dissolve window's frames, and as many again before it, where its ramp may have begun.
            entries.count - 1 - 2 * longest - placementMargin - 1,
            extreme.flatMap { $0.short ? $0.first - settings.fadeRampFrames - 1 : nil } ?? .max,
            pendingFade.map { $0.rampStart } ?? .max,
            // The frames of a dissolve being followed, for its ramp (unless it goes on and on).
            dissolveGroup.flatMap { $0.last - $0.first <= 2 * longest ? $0.first - ($0.last - $0.first) - placementMargin : nil } ?? .max,
        ].min()!
        guard removable > 30 else { return }
        runStartCandidates = nil
        entries.removeFirst(removable)
        next -= removable
        extreme = extreme.map { ($0.first - removable, $0.last - removable, $0.dark, $0.short) }
        pendingFade = pendingFade.map { ($0.rampStart - removable, $0.first - removable, $0.last - removable, $0.dark) }
        dissolveGroup?.shift(by: removable)
    }
}
