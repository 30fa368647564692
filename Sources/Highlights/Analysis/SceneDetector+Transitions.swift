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
            var dot = 0.0
            for k in f.indices { dot += Double(f[k] - first[k]) * Double(last[k] - first[k]) }
            let alpha = max(0, min(1, dot / norm))
            guard abs(alpha - Double(m - a) / length) <= settings.maximumBlendBend else { return nil }
            var residual = 0.0
            for k in f.indices { residual += abs(Double(f[k] - first[k]) - alpha * Double(last[k] - first[k])) }
            residuals += residual / span
            alphas.append(alpha)
        }
        let mean = residuals / max(1, Double(alphas.count))
        return mean <= settings.maximumBlendResidual ? (mean, alphas) : nil
    }

    func closeDissolveGroup() {
        guard let group = dissolveGroup else { return }
        dissolveGroup = nil
        candidates.append(Candidate(change: group.change, rank: 1))
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
            let previous = entries[i - 1].luma
            let leaving = pending.dark ? e.luma - previous > 0.5 : previous - e.luma > 0.5
            if !leaving || i - pending.last > settings.fadeRampFrames {
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
            while rampStart > 0 && stretch.first - rampStart < settings.fadeRampFrames {
                let d = entries[rampStart - 1].luma - entries[rampStart].luma
                guard stretch.dark ? d > 0.5 : d < -0.5 else { break }
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
