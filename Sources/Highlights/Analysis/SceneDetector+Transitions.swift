import Foundation
import MomentsSupport

/// Gradual changes: dissolves (every frame a blend of the ends) and fades through black or white.
extension SceneDetector {
    // MARK: Dissolves

    func findDissolves(endingAt b: Int) {
        let end = entries[b]
        guard end.luma >= settings.darkLuma, end.luma <= settings.brightLuma else { return }
        if let group = dissolveGroup, b - group.last > settings.dissolveLengths.max() ?? 60 { closeDissolveGroup() }
        for length in settings.dissolveLengths {
            let a = b - length
            guard a >= 0 else { break }
            let start = entries[a]
            guard start.luma >= settings.darkLuma, start.luma <= settings.brightLuma else { continue }
            let span = Self.difference(start, end)
            guard span >= settings.minimumGradualSpan else { continue }
            // A single step carrying half of the change is a cut, not a blend.
            guard !entries[(a + 1)...b].contains(where: { $0.step > 0.5 * span }) else { continue }
            guard let (residual, alphas) = blendFit(from: a, to: b) else { continue }
            // Motion inside one shot can pass for a blend over a short window: a dissolve's ends
            // differ by clearly more than the shot moved over as many frames just before it.
            var afterBurst = false
            if a - length >= 0 && Self.difference(entries[a - length], start) * settings.dissolveMotionRatio > span {
                // A zoom or a whip pan as the blend begins moves the picture just before the window
                // more than the shot moves otherwise: then the window is measured against the frames
                // before that, unless windows that passed outright already cover it.
                guard a - 2 * length >= 0,
                    Self.difference(entries[a - 2 * length], entries[a - length]) * settings.dissolveMotionRatio <= span
                else { continue }
                if let group = dissolveGroup, !group.afterBurst, a <= group.last { continue }
                afterBurst = true
            }
            if let group = dissolveGroup {
                if a > group.last {
                    closeDissolveGroup()
                } else if group.afterBurst && !afterBurst {
                    // Windows that pass outright replace those that passed only after a burst.
                    dissolveGroup = nil
                }
            }
            // The ramp: from the last frame still all `a` to the first already all `b`.
            let rampStart = a + (alphas.lastIndex(where: { $0 <= 0.03 }).map { $0 + 1 } ?? 0)
            let rampEnd = a + 1 + (alphas.firstIndex(where: { $0 >= 0.97 }) ?? alphas.count)
            let change = SceneChange(
                time: (entries[rampStart].time + entries[rampEnd].time) / 2, kind: .dissolve,
                transitionStart: entries[rampStart].time, transitionEnd: entries[rampEnd].time, strength: span)
            if var group = dissolveGroup {
                if length > group.length || (length == group.length && residual < group.residual) {
                    (group.change, group.length, group.residual) = (change, length, residual)
                }
                group.last = max(group.last, b)
                dissolveGroup = group
            } else {
                dissolveGroup = DissolveGroup(first: a, last: b, change: change, length: length, residual: residual, afterBurst: afterBurst)
            }
            if VideoScanner.debug {
                FileHandle.standardError.write(
                    Data(
                        String(
                            format: "dissolve window %.3f–%.3f: span %.1f, residual %.3f\n",
                            start.time, end.time, span, residual
                        ).utf8))
            }
        }
    }

    /// How well frames `a+1 … b-1` are blends of `a` and `b`: the mean residual per unit of change
    /// (in windows of `blendTrimFrames` or more, over all but their `blendTrimShare` worst frames),
    /// and each frame's α; nil when α does not rise in a straight line or the residual is too large.
    func blendFit(from a: Int, to b: Int) -> (Double, [Double])? {
        let first = entries[a].blocks, last = entries[b].blocks
        var norm = 0.0, span = 0.0
        for k in first.indices {
            let d = Double(last[k] - first[k])
            norm += d * d
            span += abs(d)
        }
        guard norm > 0 else { return nil }
        let length = Double(b - a)
        var alphas: [Double] = []
        var residuals: [Double] = []
        for m in (a + 1)..<b {
            let f = entries[m].blocks
            let alpha = blendAlpha(of: m, from: first, to: last, norm: norm)
            guard abs(alpha - Double(m - a) / length) <= settings.maximumBlendBend else { return nil }
            var residual = 0.0
            for k in f.indices { residual += abs(Double(f[k] - first[k]) - alpha * Double(last[k] - first[k])) }
            residuals.append(residual / span)
            alphas.append(alpha)
        }
        // A whip pan or a zoom in one of the shots breaks the blend for a few frames of a long
        // window: its fit is judged without its worst frames.
        let trim = b - a >= settings.blendTrimFrames ? Int(Double(residuals.count) * settings.blendTrimShare) : 0
        let kept = trim > 0 ? residuals.sorted().dropLast(trim) : residuals[...]
        let mean = kept.reduce(0, +) / max(1, Double(kept.count))
        return mean <= settings.maximumBlendResidual ? (mean, alphas) : nil
    }

    /// Each frame's α between `a` and `b` (frames `a+1 … b-1`): where it lies along the change from
    /// one to the other, on the blocks, clamped to 0…1.
    func blendAlphas(from a: Int, to b: Int) -> [Double]? {
        let first = entries[a].blocks, last = entries[b].blocks
        var norm = 0.0
        for k in first.indices {
            let d = Double(last[k] - first[k])
            norm += d * d
        }
        guard norm > 0 else { return nil }
        return ((a + 1)..<b).map { blendAlpha(of: $0, from: first, to: last, norm: norm) }
    }

    /// Where frame `m`'s blocks lie along the change from `first` to `last` (whose squared length
    /// is `norm`), clamped to 0…1.
    func blendAlpha(of m: Int, from first: [Float], to last: [Float], norm: Double) -> Double {
        let f = entries[m].blocks
        var dot = 0.0
        for k in f.indices { dot += Double(f[k] - first[k]) * Double(last[k] - first[k]) }
        return max(0, min(1, dot / norm))
    }

    func closeDissolveGroup() {
        guard let group = dissolveGroup else { return }
        dissolveGroup = nil
        var change = group.change
        if group.first >= 0, group.last < entries.count, let (start, end) = fittedRamp(from: group.first, to: group.last) {
            let (placedStart, placedEnd) = placedRamp(start: start, end: end)
            change.transitionStart = time(at: placedStart)
            change.transitionEnd = time(at: placedEnd)
            change.time = (change.transitionStart + change.transitionEnd) / 2
        }
        candidates.append(Candidate(change: change, rank: 1))
    }

    /// The time of the fractional entry `x`, between the frames either side of it.
    func time(at x: Double) -> Double {
        let k = max(0, min(entries.count - 1, Int(saturating: x.rounded(.down))))
        guard k + 1 < entries.count else { return entries[k].time }
        return entries[k].time + (x - Double(k)) * (entries[k + 1].time - entries[k].time)
    }

    /// Where the ramp fitted between `start` and `end` really begins and ends, read from each end's
    /// own side, so that motion in one shot does not move the other end:
    ///
    /// * the start is where the frames leave the outgoing shot: their distance to the first frame
    ///   of the incoming shot (`end`) falls below the course it kept before (and stays below). A
    ///   whip pan or a zoom in the outgoing shot as the blend begins breaks every blend window
    ///   across it, so the windows start after it; but the incoming shot's share grows from the
    ///   blend's first frame on, while the outgoing shot's motion moves its distance from an
    ///   unrelated picture little;
    /// * the end is where the frames stop moving away from the outgoing shot (its frame at the
    ///   start): the knee where that distance, rising straight across the blend, levels off, even
    ///   when the incoming shot moves on (a hand-held shot drifts the level, it does not fold it),
    ///   then where the rise meets the level just after that knee.
    ///
    /// The frames looked at reach back as far as the ramp is long (never into the change before)
    /// and ten frames beyond its end. Returns fractional entries; the fitted ramp where a side
    /// shows no such edge.
    func placedRamp(start: Int, end: Int) -> (Double, Double) {
        let margin = placementMargin
        var low = max(0, start - (end - start) - margin)
        // Not into the change before: from the second frame after it.
        if let previousEnd = candidates.filter({ $0.change.transitionEnd < entries[start].time }).map(\.change.transitionEnd).max(),
            let after = entries.firstIndex(where: { $0.time > previousEnd })
        {
            low = max(low, min(start, after + 1))
        }
        let placedStart = rampStart(fitted: start, end: end, from: low)
        let placedEnd = rampEnd(fitted: end, from: Int(saturating: placedStart.rounded()))
        guard placedEnd - placedStart >= 2 else { return (Double(start), Double(end)) }
        if VideoScanner.debug {
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "dissolve ramp placed %.3f–%.3f (fitted %.3f–%.3f)\n",
                        time(at: placedStart), time(at: placedEnd), entries[start].time, entries[end].time
                    ).utf8))
        }
        return (placedStart, placedEnd)
    }

    /// The block distance of entry `k` from `reference`.
    private func distance(_ k: Int, _ reference: [Float]) -> Double { Self.layoutDistance(entries[k].blocks, reference) }

    /// Where the frames from `low` on leave the outgoing shot for the incoming one (whose first
    /// whole frame is `end`): their distance to it leaves the course it kept before the blend (a
    /// level, or a slow drift as the light changes, measured over the first half of the frames
    /// before `fitted`) and stays below it; traced back to where that fall began. `fitted` when
    /// it never leaves.
    private func rampStart(fitted start: Int, end: Int, from low: Int) -> Double {
        let margin = placementMargin
        let toIncoming = (low...end).map { distance($0, entries[end].blocks) }
        let before = max(2, (start - low + 1) / 2)
        let (drift, level) = before >= 3 ? Self.line(through: Array(toIncoming[0..<before]), from: 0) : (0, toIncoming[0])
        let deficit = toIncoming.indices.map { level + drift * Double($0) - toIncoming[$0] }
        let noise = Self.median(deficit[0..<before].map(abs))
        let band = max(0.03 * (level + drift * Double(start - low)), 3 * noise)
        let last = toIncoming.count - 1
        guard let k = toIncoming.indices.first(where: { k in (k..<min(toIncoming.count, k + 3)).allSatisfy { deficit[$0] > band } }),
            k < last
        else { return Double(start) }
        // From the first frame off the course in the `margin` frames up to there (a whip pan as
        // the blend begins jumps the deficit at once, and may fold it back for a frame or two),
        // back to where the deficit, growing as it does over the frames after `k` (or, where
        // motion slows that, as it does on average across the blend), was nothing; but never
        // before the last frame still on the course.
        let (local, _) = Self.line(through: Array(deficit[k..<min(toIncoming.count, k + 5)]), from: k)
        let growth = max(local, (deficit[last] - deficit[k]) / Double(last - k))
        let earliest = max(0, k - margin)
        let off = (earliest...k).first { deficit[$0] > band } ?? k
        let met = growth > 0 ? Double(off) - deficit[off] / growth : Double(off)
        let onCourse = deficit[..<off].lastIndex { $0 <= 0 } ?? 0
        return Double(low) + max(Double(max(earliest, onCourse)), min(Double(off), met))
    }

    /// Where the frames from `first` (the blend's start) on stop moving away from the outgoing
    /// shot: the knee where their distance from `first`, rising across the blend, levels off, then
    /// where the rise meets the level just after that knee (a straight fit rounds a blend that
    /// ends steeply). `fitted` when no such knee shows within ten frames beyond it.
    private func rampEnd(fitted end: Int, from first: Int) -> Double {
        let margin = placementMargin
        let beyond = min(entries.count - 1, end + margin)
        guard beyond - first >= 6 else { return Double(end) }
        let fromOutgoing = (first...beyond).map { distance($0, entries[first].blocks) }
        guard let knee = Self.knee(of: fromOutgoing, from: (end - first) / 2) else { return Double(end) }
        let after = Array(fromOutgoing[knee..<min(fromOutgoing.count, knee + margin / 2 + 1)])
        let (level, band) = Self.level(of: after)
        guard let j = stride(from: knee, through: 2, by: -1).first(where: { j in (j - 2...j).allSatisfy { fromOutgoing[$0] < level - band } })
        else { return Double(first + knee) }
        let from = max(0, j - 4)
        let (slope, intercept) = Self.line(through: Array(fromOutgoing[from...j]), from: from)
        let met = slope > 0 ? (level - intercept) / slope : Double(j)
        let placed = max(Double(j), min(Double(knee), met))
        // A blend that slows into its end (an HDR source's highlights, clipped as the incoming shot
        // brightens, stop changing one by one) bends well before it levels: the frames at the
        // knee are still short of the level they settle at. Where the last frames looked at are
        // flat (rising at most a quarter as fast as the blend), the frame at the end placed so far
        // lies below that level's band, and the frames from it rise on, none below the one before,
        // until they come within the band, the end is there. (A shot that moves on after the blend
        // keeps rising in the tail, which is then no level; one that settles and then drifts
        // pauses between the two.)
        let tail = Array(fromOutgoing.suffix(margin / 2 + 1))
        let (settled, settledBand) = Self.level(of: tail)
        let (tailSlope, _) = Self.line(through: tail, from: 0)
        let short = Int(saturating: placed.rounded(.down))
        if settings.endsWhereBlendSettles, fromOutgoing.count - tail.count > short, fromOutgoing[short] < settled - settledBand,
            slope > 0, abs(tailSlope) <= 0.25 * slope,
            let reached = (short..<fromOutgoing.count).first(where: { fromOutgoing[$0] >= settled - settledBand }),
            (short..<reached).allSatisfy({ fromOutgoing[$0 + 1] >= fromOutgoing[$0] })
        {
            return Double(first) + max(placed, Double(reached))
        }
        return Double(first) + placed
    }

    /// The level `values` hold (their median) and the band around it that they keep within: 3 %
    /// of it, or three times their median deviation from it where they vary more.
    static func level(of values: [Double]) -> (level: Double, band: Double) {
        let level = median(values)
        return (level, max(0.03 * level, 3 * median(values.map { abs($0 - level) })))
    }

    /// Frames looked at beyond a dissolve's fitted ramp (ten at 30 fps).
    var placementMargin: Int { settings.cutWindow + 2 }

    /// The middle value of `values` (the upper one of an even count).
    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// The least-squares line through `values` at x = `from`, `from` + 1, …: (slope, intercept).
    static func line(through values: [Double], from: Int) -> (slope: Double, intercept: Double) {
        let n = Double(values.count)
        guard values.count >= 2 else { return (0, values.first ?? 0) }
        let xs = values.indices.map { Double(from + $0) }
        let mx = xs.reduce(0, +) / n, my = values.reduce(0, +) / n
        let sxx = xs.reduce(0) { $0 + ($1 - mx) * ($1 - mx) }
        let sxy = zip(xs, values).reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
        let slope = sxy / sxx
        return (slope, my - slope * mx)
    }

    /// Where `values` (from index `from` on) bend from a rise into a level: the knee of the
    /// continuous two-piece line that fits them best by least squares, whose second piece rises at
    /// most half as fast as the first. Nil when no such bend fits.
    static func knee(of values: [Double], from: Int) -> Int? {
        let n = values.count
        guard from >= 0, n - from >= 5 else { return nil }
        var best: (error: Double, knee: Int)?
        for knee in (from + 2)..<(n - 1) {
            // y ≈ c + m t + d · max(0, t − knee): the normal equations, 3 × 3.
            var a = [[Double]](repeating: [0, 0, 0], count: 3), b = [0.0, 0.0, 0.0]
            for t in from..<n {
                let row = [1, Double(t), Double(max(0, t - knee))]
                for i in 0..<3 {
                    b[i] += row[i] * values[t]
                    for j in 0..<3 { a[i][j] += row[i] * row[j] }
                }
            }
            guard let p = solve3(a, b), p[1] > 0, p[1] + p[2] <= 0.5 * p[1] else { continue }
            var error = 0.0
            for t in from..<n {
                let e = p[0] + p[1] * Double(t) + p[2] * Double(max(0, t - knee)) - values[t]
                error += e * e
            }
            if best == nil || error < best!.error { best = (error, knee) }
        }
        return best?.knee
    }

    /// Solves the 3 × 3 system `a` x = `b` (Cramer's rule); nil when it is singular.
    static func solve3(_ a: [[Double]], _ b: [Double]) -> [Double]? {
        func det(_ m: [[Double]]) -> Double {
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        }
        let d = det(a)
        guard abs(d) > 1e-9 else { return nil }
        return (0..<3).map { column in
            det(a.indices.map { i in a[i].indices.map { j in j == column ? b[i] : a[i][j] } }) / d
        }
    }

    /// The ramp of a dissolve seen by overlapping windows from `a` to `b`: every frame's α as a
    /// blend of those two, fitted by least squares with a level up to the ramp's first frame, a
    /// straight line across it and another level from its last on. The levels are free because
    /// the shots move on either side (α drifts towards the window's ends after the ramp), and
    /// every frame has its say, so that motion moves the fit less than it moves the frame where α
    /// leaves 0 or reaches 1.
    func fittedRamp(from a: Int, to b: Int) -> (Int, Int)? {
        guard b - a >= 2, let alphas = blendAlphas(from: a, to: b) else { return nil }
        // α for frames a…b (0 and 1 at the ends), and running sums for the fit.
        let values = [0] + alphas + [1]
        let n = values.count
        var sumA = [0.0], sumAM = [0.0], sumA2 = [0.0], sumM = [0.0], sumM2 = [0.0]
        for (m, alpha) in values.enumerated() {
            let x = Double(m)
            sumA.append(sumA[m] + alpha)
            sumAM.append(sumAM[m] + alpha * x)
            sumA2.append(sumA2[m] + alpha * alpha)
            sumM.append(sumM[m] + x)
            sumM2.append(sumM2[m] + x * x)
        }
        // Σ over m in lo..<hi.
        func range(_ sums: [Double], _ lo: Int, _ hi: Int) -> Double { sums[hi] - sums[lo] }
        let total = Double(n), totalA = sumA[n], totalA2 = sumA2[n]
        var best: (error: Double, start: Int, end: Int)?
        for start in 0..<(n - 1) {
            for end in (start + 1)..<n {
                // r: 0 before the ramp, (m − start) / length on it, 1 after; α ≈ p0 (1 − r) + p1 r.
                let length = Double(end - start), s = Double(start), count = Double(end - start + 1)
                let after = Double(n - end - 1)
                let r = (range(sumM, start, end + 1) - s * count) / length + after
                let r2 = (range(sumM2, start, end + 1) - 2 * s * range(sumM, start, end + 1) + count * s * s) / (length * length) + after
                let alphaR = (range(sumAM, start, end + 1) - s * range(sumA, start, end + 1)) / length + range(sumA, end + 1, n)
                // The normal equations for p0, p1.
                let q00 = total - 2 * r + r2, q01 = r - r2, q11 = r2
                let b0 = totalA - alphaR, b1 = alphaR
                let determinant = q00 * q11 - q01 * q01
                guard determinant > 1e-9 else { continue }
                let p0 = (b0 * q11 - b1 * q01) / determinant, p1 = (q00 * b1 - q01 * b0) / determinant
                guard p1 - p0 >= 0.5 else { continue }
                let error = totalA2 - p0 * b0 - p1 * b1
                if best == nil || error < best!.error { best = (error, start, end) }
            }
        }
        if VideoScanner.debug, let best {
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "dissolve ramp fitted %.3f–%.3f over %.3f–%.3f: α %@\n",
                        entries[a + best.start].time, entries[a + best.end].time, entries[a].time, entries[b].time,
                        values.map { String(format: "%.2f", $0) }.joined(separator: " ")
                    ).utf8))
        }
        return best.map { (a + $0.start, a + $0.end) }
    }

    // MARK: Fades

    func isExtreme(_ e: Entry, dark: Bool) -> Bool {
        dark ? e.luma < settings.darkLuma : e.luma > settings.brightLuma && e.lumaSpread < settings.flatLuma
    }

    /// Follows black and white stretches, and the ramps out of them.
    func followExtremes(at i: Int) {
        let e = entries[i]
        if let pending = pendingFade, i > pending.last + 1 {
            // The ramp out goes on while the picture keeps leaving black (or white).
            if !isOnRamp(from: entries[i], towards: entries[i - 1], dark: pending.dark) || i - pending.last > settings.fadeRampFrames {
                closeFade(pending, rampEnd: i - 1)
            }
        }
        if let stretch = extreme {
            if isExtreme(e, dark: stretch.dark) {
                extreme = (stretch.first, i, stretch.dark, stretch.short && e.time - entries[stretch.first].time <= settings.maximumFadeHold)
                return
            }
            extreme = nil
            // Too long to be a fade, or nothing before it in this run.
            guard stretch.short, stretch.first >= 1, !isExtreme(entries[stretch.first - 1], dark: stretch.dark) else { return }
            // The ramp in: back while the picture was heading for black (or white).
            var rampStart = stretch.first - 1
            while rampStart > 0 && stretch.first - rampStart < settings.fadeRampFrames
                && isOnRamp(from: entries[rampStart - 1], towards: entries[rampStart], dark: stretch.dark)
            {
                rampStart -= 1
            }
            pendingFade = (rampStart, stretch.first, stretch.last, stretch.dark)
            followExtremes(at: i)
            return
        }
        if pendingFade == nil, isExtreme(e, dark: true) || isExtreme(e, dark: false), i >= 1 {
            extreme = (i, i, isExtreme(e, dark: true), true)
        }
    }

    /// Whether going from `a` to the next (or previous) frame `b` heads for black (or white): its
    /// brightness moves that way, or its contrast falls, as a fade scales the picture towards a
    /// flat one. The contrast because a flickering shot's brightness jumps either way from frame
    /// to frame while a fade still takes its contrast down.
    func isOnRamp(from a: Entry, towards b: Entry, dark: Bool) -> Bool {
        let brightnessMove = dark ? a.luma - b.luma : b.luma - a.luma
        return brightnessMove > 0.5 || a.lumaSpread - b.lumaSpread > 0.3
    }

    func closeFade(_ fade: (rampStart: Int, first: Int, last: Int, dark: Bool), rampEnd: Int) {
        pendingFade = nil
        guard rampEnd > fade.last, rampEnd < entries.count else { return }
        let a = entries[fade.rampStart], b = entries[rampEnd]
        let span = Self.difference(a, b)
        if VideoScanner.debug {
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "%@ stretch %.3f–%.3f, ramps %.3f–%.3f: span %.1f\n",
                        fade.dark ? "black" : "white", entries[fade.first].time,
                        entries[fade.last].time, a.time, b.time, span
                    ).utf8))
        }
        // Out of a picture and back into the same one is a flash or a blink, not a change of shot.
        guard span >= settings.minimumGradualSpan else { return }
        candidates.append(
            Candidate(
                change: SceneChange(
                    time: (a.time + b.time) / 2, kind: .fade, transitionStart: a.time,
                    transitionEnd: b.time, strength: span), rank: 2))
    }
}
