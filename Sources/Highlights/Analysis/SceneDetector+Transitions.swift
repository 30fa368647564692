import Foundation

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
            if a - length >= 0 && Self.difference(entries[a - length], start) * settings.dissolveMotionRatio > span { continue }
            if let group = dissolveGroup, a > group.last { closeDissolveGroup() }
            // The ramp: from the last frame still all `a` to the first already all `b`.
            let rampStart = a + (alphas.lastIndex(where: { $0 <= 0.03 }).map { $0 + 1 } ?? 0)
            let rampEnd = a + 1 + (alphas.firstIndex(where: { $0 >= 0.97 }) ?? alphas.count)
            let change = SceneChange(time: (entries[rampStart].time + entries[rampEnd].time) / 2, kind: .dissolve,
                                     transitionStart: entries[rampStart].time, transitionEnd: entries[rampEnd].time, strength: span)
            if let group = dissolveGroup {
                let better = length > group.length || (length == group.length && residual < group.residual)
                dissolveGroup = (group.first, max(group.last, b), better ? change : group.change,
                                 better ? length : group.length, better ? residual : group.residual)
            } else {
                dissolveGroup = (a, b, change, length, residual)
            }
            if VideoScanner.debug {
                FileHandle.standardError.write(Data(String(format: "dissolve window %.3f–%.3f: span %.1f, residual %.3f\n",
                                                           start.time, end.time, span, residual).utf8))
            }
        }
    }

    /// How well frames `a+1 … b-1` are blends of `a` and `b`: the mean residual per unit of change,
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
        var residuals = 0.0
        for m in (a + 1)..<b {
            let f = entries[m].blocks
            let alpha = blendAlpha(of: m, from: first, to: last, norm: norm)
            guard abs(alpha - Double(m - a) / length) <= settings.maximumBlendBend else { return nil }
            var residual = 0.0
            for k in f.indices { residual += abs(Double(f[k] - first[k]) - alpha * Double(last[k] - first[k])) }
            residuals += residual / span
            alphas.append(alpha)
        }
        let mean = residuals / max(1, Double(alphas.count))
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
            change.time = (entries[start].time + entries[end].time) / 2
            change.transitionStart = entries[start].time
            change.transitionEnd = entries[end].time
        }
        candidates.append(Candidate(change: change, rank: 1))
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
            FileHandle.standardError.write(Data(String(format: "dissolve ramp fitted %.3f–%.3f over %.3f–%.3f: α %@\n",
                entries[a + best.start].time, entries[a + best.end].time, entries[a].time, entries[b].time,
                values.map { String(format: "%.2f", $0) }.joined(separator: " ")).utf8))
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
                    && isOnRamp(from: entries[rampStart - 1], towards: entries[rampStart], dark: stretch.dark) {
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
            FileHandle.standardError.write(Data(String(format: "%@ stretch %.3f–%.3f, ramps %.3f–%.3f: span %.1f\n",
                                                       fade.dark ? "black" : "white", entries[fade.first].time,
                                                       entries[fade.last].time, a.time, b.time, span).utf8))
        }
        // Out of a picture and back into the same one is a flash or a blink, not a change of shot.
        guard span >= settings.minimumGradualSpan else { return }
        candidates.append(Candidate(change: SceneChange(time: (a.time + b.time) / 2, kind: .fade, transitionStart: a.time,
                                                        transitionEnd: b.time, strength: span), rank: 2))
    }
}
