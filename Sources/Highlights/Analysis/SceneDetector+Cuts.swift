import Foundation

/// Cuts: a step well above the median step around it; flashes and changes of focus are not cuts.
extension SceneDetector {
    // MARK: Cuts

    /// A step below this is a repeated frame (a slower source brought to this rate): it says
    /// nothing about motion, so the judgements of a step's neighbours pass over it.
    static let repeatedFrameStep = 0.5

    func judgeCut(_ i: Int) {
        guard i >= 1, i < entries.count else { return }
        let step = entries[i].step
        guard step >= candidateFloor else { return }
        let around = movingSteps(around: i)
        let window = around.map { entries[$0].step }.sorted()
        var median = window.count >= 3 ? window[window.count / 2] : baselineHint
        if window.count < 3 {
            // Mostly repeated frames (a time-lapse, a slow source brought to a faster rate): the
            // source's own changes of picture lie further apart, and a cut must stand out from them.
            // (Changes smaller than any cut: a slideshow's are cuts, each to be found.)
            let reach = max(settings.cutWindow, settings.sparseStepReach)
            func own(_ k: Int) -> Bool { entries[k].step >= Self.repeatedFrameStep && entries[k].step < settings.minimumCut }
            let before = (max(1, i - reach)..<max(1, i - settings.cutWindow)).reversed().filter(own).prefix(2)
            let after = (min(entries.count, i + settings.cutWindow + 1)..<min(entries.count, i + reach + 1)).filter(own).prefix(2)
            // (Not the few steps inside the window: a cut made over two frames has its own there.)
            let beyond = (before + after).map { entries[$0].step }
            if !beyond.isEmpty { median = max(median, Self.median(beyond)) }
        }
        if entries.count - 1 - i < settings.cutWindow / 2 {
            // The run ends here, so the window is one-sided: a cut must also stand out from the
            // steps just before it (the end of a whip pan or a burst of motion does not).
            let recent = entries[max(1, i - 3)..<i].map(\.step).sorted()
            if !recent.isEmpty { median = max(median, recent[recent.count / 2]) }
        }
        let isCut = isCutSized(step, median: median) || isLocalCut(i, around: around, median: median)
        if VideoScanner.debug, step >= settings.minimumStillCut {
            let verdict =
                !isCut
                ? "not a cut"
                : isFlash(at: i)
                    ? "flash"
                    : isSharpening(at: i)
                        ? "sharpening"
                        : isInBurst(at: i) ? "burst" : isRelit(at: i) ? "light" : "cut"
            FileHandle.standardError.write(
                Data(String(format: "step at %.3f: %.1f (median %.2f): %@\n", entries[i].time, step, median, verdict).utf8))
        }
        guard isCut, !isFlash(at: i), !isSharpening(at: i), !isInBurst(at: i), !isRelit(at: i) else { return }
        let e = entries[i]
        candidates.append(
            Candidate(
                change: SceneChange(
                    time: e.time, kind: .cut, transitionStart: e.time, transitionEnd: e.time,
                    strength: step), rank: 0))
    }

    /// The smallest step judged as a cut at all (by its size, or by its most changed blocks).
    var candidateFloor: Double { min(settings.minimumStillCut, settings.minimumLocalCutStep) }

    /// The entries within the cut window of entry `i` (not `i` itself) whose steps are no repeated frame.
    func movingSteps(around i: Int) -> [Int] {
        (max(1, i - settings.cutWindow)...min(entries.count - 1, i + settings.cutWindow))
            .filter { $0 != i && entries[$0].step >= Self.repeatedFrameStep }
    }

    /// Whether `step` is a cut's size where the steps around it have `median`: above the floor
    /// and three times the median, or, where the shot is still, a smaller floor and eight times.
    func isCutSized(_ step: Double, median: Double) -> Bool {
        (step >= settings.minimumCut && step >= settings.cutRatio * median + 5)
            || (step >= settings.minimumStillCut && step >= settings.stillCutRatio * median + 3)
    }

    /// Whether a step of `step` after the last frame pushed would be a cut's size against the
    /// steps just before it (as the run's last frame is judged, from one side only).
    func standsOutAtEnd(_ step: Double) -> Bool {
        let recent = entries.dropFirst().suffix(settings.cutWindow).map(\.step).filter { $0 >= Self.repeatedFrameStep }
        return isCutSized(step, median: recent.count >= 3 ? Self.median(recent) : baselineHint)
    }

    /// A fixed camera's jump cut: the people or things in the picture are somewhere else from one
    /// frame to the next while the rest stays, so the step over the whole picture is small (a
    /// street's walkers fill a few percent of it), but over the blocks that changed most it stands
    /// far above the shot's own motion there, while the rest of the picture stays (half of its
    /// blocks or more barely change). Only in a still shot, and not where the light changed (a lamp
    /// switched on changes the dark parts of the picture most). A subject's leap inside a dissolve,
    /// whose blend changes every block a little, is none.
    func isLocalCut(_ i: Int, around: [Int], median: Double) -> Bool {
        let step = entries[i].step
        guard median <= settings.localCutStillness, step >= settings.minimumLocalCutStep,
            step >= settings.localCutStepRatio * median,
            abs(entries[i].luma - entries[i - 1].luma) < settings.localCutLumaShift
        else { return false }
        // The blocks that changed most, and the median block (the rest of the picture).
        let blocks = Self.blockSteps(entries[i - 1], entries[i], percentiles: [95, 50])
        let (local, rest) = (blocks[0], blocks[1])
        let others = around.map { Self.localStep(entries[$0 - 1], entries[$0]) }
        let localMedian = others.isEmpty ? 0 : Self.median(others)
        // The nearest moving steps on each side: a subject moving through a still shot (in a slow
        // source, in jumps between repeated frames) moves as far again in one of them.
        let before = zip(around, others).filter { $0.0 < i }.suffix(2).map(\.1)
        let after = zip(around, others).filter { $0.0 > i }.prefix(2).map(\.1)
        let fires =
            local >= settings.minimumLocalCut && local >= settings.localCutRatio * max(localMedian, step)
            && rest <= settings.localCutRestShare * local
            && !(before + after).isEmpty && !(before + after).contains { $0 >= settings.burstShare * local }
        if VideoScanner.debug {
            let nearest = (before + after).map { String(format: "%.1f", $0) }.joined(separator: ",")
            let numbers = String(
                format: "at %.3f: step %.1f (median %.2f), local %.1f (median %.2f, the rest %.2f; nearest ",
                entries[i].time, step, median, local, localMedian, rest)
            FileHandle.standardError.write(Data(("local cut candidate " + numbers + nearest + (fires ? "): a cut\n" : "): no cut\n")).utf8))
        }
        return fires
    }

    /// The picture before the step comes back within a few frames, or the one after it was there a
    /// few frames before: a flash (or a flash ending), not a new shot.
    func isFlash(at i: Int) -> Bool {
        let step = entries[i].step
        for k in 1...settings.flashFrames {
            if i + k < entries.count && Self.difference(entries[i - 1], entries[i + k]) < 0.5 * step { return true }
            if i - k - 1 >= 0 && Self.difference(entries[i - k - 1], entries[i]) < 0.5 * step { return true }
        }
        return false
    }

    /// The same picture in another light: a light switched on or off, an exposure or colour
    /// change. Brightening or darkening a picture, even past its black or white (where detail is
    /// lost, and the colours of an HDR picture shift), leaves every edge where it was and keeps
    /// which side of it is brighter; another shot, or the same one reframed or with people
    /// elsewhere, flips the order of many neighbouring pixels, or of many in a few blocks.
    func isRelit(at i: Int) -> Bool {
        guard let changes = Self.orderChanges(entries[i - 1], entries[i]) else { return false }
        return changes.whole < settings.relitChanges && changes.blocks < settings.relitBlockChanges
    }

    /// Of the pairs of neighbouring pixels (across and down) whose order of brightness can be
    /// told, the share whose order changed: pairs clearly ordered in both pictures (normalised
    /// luma a tenth of the contrast apart or more) that flipped, and strong edges (three tenths)
    /// come or gone where the other picture is faint (under a tenth) but not crushed to black or
    /// white (where a dimmer light loses detail). Grain says nothing, nor does an edge that a
    /// change of light only weakened. Over the picture, and the 90th percentile over its 8 × 8
    /// blocks (those with eight such pairs or more); nil when too few pairs can be told (a flat
    /// picture, a black frame).
    static func orderChanges(_ a: Entry, _ b: Entry) -> (whole: Double, blocks: Double)? {
        let w = a.width, h = a.structure.count / max(1, w)
        guard a.structure.count == b.structure.count, w > 1, h > 1 else { return nil }
        let bw = max(1, w / 8), bh = max(1, h / 8)
        var counted = [Int](repeating: 0, count: bw * bh), changed = [Int](repeating: 0, count: bw * bh)
        let clear: Float = 0.1, strong: Float = 0.3
        // Normalised luma at or beyond black + 8 or white − 8 (code values 16 and 235).
        func limits(_ e: Entry) -> (low: Float, high: Float) {
            let scale = Float(e.lumaSpread + 4), mean = Float(e.luma)
            return ((24 - mean) / scale, (227 - mean) / scale)
        }
        let limitsA = limits(a), limitsB = limits(b)
        // Counts the pair (p, q) in `cell` if its order can be told, and whether it changed.
        func compare(_ p: Int, _ q: Int, in cell: Int) {
            let da = a.structure[p] - a.structure[q], db = b.structure[p] - b.structure[q]
            if abs(da) >= clear && abs(db) >= clear {
                counted[cell] += 1
                if (da > 0) != (db > 0) { changed[cell] += 1 }
            } else if max(abs(da), abs(db)) >= strong {
                // The picture where the pair is faint: its detail there crushed, or not.
                let (faint, limit) = abs(da) < clear ? (a.structure, limitsA) : (b.structure, limitsB)
                guard max(faint[p], faint[q]) > limit.low, min(faint[p], faint[q]) < limit.high else { return }
                counted[cell] += 1
                changed[cell] += 1
            }
        }
        for row in 0..<h {
            for col in 0..<w {
                let p = row * w + col, cell = min(bh - 1, row / 8) * bw + min(bw - 1, col / 8)
                if col + 1 < w { compare(p, p + 1, in: cell) }
                if row + 1 < h { compare(p, p + w, in: cell) }
            }
        }
        let total = counted.reduce(0, +)
        let pairs = (w - 1) * h + w * (h - 1)
        // A cut changes a good share of whatever pairs there are: a hundred tell it.
        guard total >= max(100, pairs / 50) else { return nil }
        let shares = zip(changed, counted).filter { $0.1 >= 8 }.map { Double($0.0) / Double($0.1) }.sorted()
        let blocks = shares.isEmpty ? 0 : shares[min(shares.count - 1, shares.count * 9 / 10)]
        return (Double(changed.reduce(0, +)) / Double(total), blocks)
    }

    /// The step is one picture coming into (or going out of) focus: a whip pan or a zoom ending
    /// sharp, a focus pull. The sharper picture, blurred as much as the other, is close to it; a
    /// cut to a blurred shot still differs in its coarse structure and colours.
    func isSharpening(at i: Int) -> Bool {
        var a = entries[i - 1], b = entries[i]
        let (sharpA, sharpB) = (Self.sharpness(a), Self.sharpness(b))
        guard max(sharpA, sharpB) >= settings.sharpeningRatio * min(sharpA, sharpB) else { return false }
        if sharpA < sharpB { swap(&a, &b) }
        // Blur the sharper one until it is no sharper than the other (at most a few passes).
        var blurred = a
        for _ in 0..<4 where Self.sharpness(blurred) > 1.1 * Self.sharpness(b) { blurred = Self.boxBlurred(blurred) }
        return Self.difference(blurred, b) < 0.5 * entries[i].step
    }

    /// The step is one of a burst of large steps (a quick zoom, a whip pan starting or ending, a
    /// subject sweeping past the lens): two of the four steps nearest it, two on each side, are at
    /// least half as large. A cut's neighbours are the shots' own motion, a fraction of the jump
    /// between two shots; a cut made over two frames (a blended frame between the shots) has one.
    /// Repeated frames are passed over, as in the cut's window: in a 15 or 20 fps source every
    /// second or third step is nothing, whatever the motion.
    func isInBurst(at i: Int) -> Bool {
        let step = entries[i].step
        func nearest(_ indices: some Sequence<Int>) -> [Double] {
            Array(indices.lazy.map { self.entries[$0].step }.filter { $0 >= Self.repeatedFrameStep }.prefix(2))
        }
        let around = nearest(stride(from: i - 1, through: max(1, i - 4), by: -1)) + nearest((i + 1)..<min(entries.count, i + 5))
        if VideoScanner.debug {
            let flips = Self.orderChanges(entries[i - 1], entries[i])
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "cut candidate at %.3f: step %.1f, steps within two frames %@, order changes %.3f (blocks %.3f)\n",
                        entries[i].time, step, around.map { String(format: "%.1f", $0) }.joined(separator: ","),
                        flips?.whole ?? -1, flips?.blocks ?? -1
                    ).utf8))
        }
        return around.filter { $0 >= settings.burstShare * step }.count >= 2
    }

    /// Mean absolute horizontal and vertical gradient of the normalised luma.
    static func sharpness(_ e: Entry) -> Double {
        let w = e.width, h = e.structure.count / max(1, w)
        guard w > 1, h > 1 else { return 0 }
        var sum: Float = 0
        for row in 0..<(h - 1) {
            for col in 0..<(w - 1) {
                let k = row * w + col
                sum += abs(e.structure[k + 1] - e.structure[k]) + abs(e.structure[k + w] - e.structure[k])
            }
        }
        return Double(sum) / Double((w - 1) * (h - 1))
    }

    /// The entry with its normalised luma and chroma smoothed by a 3 × 3 box.
    static func boxBlurred(_ e: Entry) -> Entry {
        let w = e.width, h = e.structure.count / max(1, w)
        func blur<T>(_ values: [T], _ value: (T) -> Float, _ make: (Float) -> T) -> [T] {
            var out = values
            for row in 0..<h {
                for col in 0..<w {
                    var sum: Float = 0, count: Float = 0
                    for dy in -1...1 where row + dy >= 0 && row + dy < h {
                        for dx in -1...1 where col + dx >= 0 && col + dx < w {
                            sum += value(values[(row + dy) * w + col + dx])
                            count += 1
                        }
                    }
                    out[row * w + col] = make(sum / count)
                }
            }
            return out
        }
        return Entry(
            time: e.time, structure: blur(e.structure, { $0 }, { $0 }),
            u: blur(e.u, { Float($0) }, { UInt8($0.rounded()) }), v: blur(e.v, { Float($0) }, { UInt8($0.rounded()) }),
            blocks: e.blocks, luma: e.luma, lumaSpread: e.lumaSpread, width: e.width, step: e.step)
    }
}
