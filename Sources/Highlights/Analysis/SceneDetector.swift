import Foundation

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
}

/// Finds scene changes in a run of consecutive decoded frames (in display order).
///
/// Hard cuts: a frame-to-frame difference well above an absolute floor *and* several times the
/// neighbouring differences (the adaptive threshold that keeps a shaky or fast shot in one piece),
/// unless the frame after it returns to the picture before it (a flash).
/// Dissolves: a sustained rise in difference whose middle frames are blends of the frames on either
/// side. Fades: a stretch of near-black frames between two brighter shots.
final class SceneDetector {
    struct Settings {
        var minimumCut = 22.0
        var adaptiveRatio = 3.0
        var lookaround = 2
        var gradualRise = 2.0
        var minimumGradualSpan = 18.0
        var maximumBlendResidual = 0.3
        var darkLuma = 30.0
        var brightLuma = 40.0
        /// Frames kept at most while a gradual change or a dark stretch is followed (10 s at 30 fps):
        /// anything longer is no transition, and memory stays bounded on a long dark or changing clip.
        var maximumHistory = 300
    }

    private struct Entry {
        let time: Double
        let thumb: Thumbnail
        let score: Double
        let luma: Double
        /// Coarse colour layout: blends of two shots blend it linearly, motion inside a shot barely moves it.
        let layout: [Float]
        /// Mean change of the layout from the previous frame.
        let layoutScore: Double
    }

    private let settings: Settings
    private var entries: [Entry] = []
    private var next = 0
    private(set) var changes: [SceneChange] = []
    // Gradual transition being followed.
    private var gradualStart: Int?
    private var gradualFarthest = 0.0
    private var gradualFarthestIndex = 0
    // Dark stretch being followed.
    private var darkStart: Int?
    private var darkEnd: Int?
    private var lastBrightBeforeDark: Double?
    /// Typical frame-to-frame difference just before this run (from the sparse samples).
    private var baselineHint = 0.0

    /// Starts a run of consecutive frames; `baseline` is the usual frame-to-frame difference there.
    func beginRun(baseline: Double) { baselineHint = baseline }

    init(settings: Settings = Settings()) { self.settings = settings }

    func push(time: Double, thumbnail: Thumbnail) {
        let score = entries.last.map { thumbnail.difference(to: $0.thumb) } ?? 0
        let layout = thumbnail.signature
        let layoutScore = entries.last.map { Self.layoutDistance(layout, $0.layout) } ?? 0
        entries.append(Entry(time: time, thumb: thumbnail, score: score, luma: thumbnail.meanLuma, layout: layout, layoutScore: layoutScore))
        while next + settings.lookaround < entries.count { evaluate(next); next += 1 }
        trim()
    }

    /// Ends the current run (the next frame pushed is not adjacent to the last).
    func endRun() {
        while next < entries.count { evaluate(next); next += 1 }
        if gradualStart != nil { closeGradual(at: gradualFarthestIndex) }
        entries.removeAll()
        next = 0
        gradualStart = nil
        darkStart = nil
        darkEnd = nil
        lastBrightBeforeDark = nil
    }

    private func trim() {
        if entries.count > settings.maximumHistory {
            // Too long to be a dissolve or a fade: stop following it.
            gradualStart = nil
            darkStart = nil
            darkEnd = nil
            lastBrightBeforeDark = nil
        }
        let keep = 90
        let removable = min(next - settings.lookaround - 1, entries.count - keep, gradualStart ?? .max, darkStart ?? .max)
        guard removable > 30 else { return }
        entries.removeFirst(removable)
        next -= removable
        gradualStart = gradualStart.map { $0 - removable }
        gradualFarthestIndex -= removable
        darkStart = darkStart.map { $0 - removable }
        darkEnd = darkEnd.map { $0 - removable }
    }

    private func neighbourMean(_ i: Int) -> Double {
        var sum = 0.0, count = 0
        for j in (i - settings.lookaround)...(i + settings.lookaround) where j != i && j >= 1 && j < entries.count {
            sum += entries[j].score
            count += 1
        }
        return count > 0 ? sum / Double(count) : 0
    }

    /// Typical layout change per frame just before frame `i` (motion and shake leave it small).
    private func recentLayoutBaseline(before i: Int) -> Double {
        let scores = entries[max(1, i - 15)..<i].map(\.layoutScore).sorted()
        return scores.count >= 5 ? scores[scores.count / 2] : 0.3
    }

    private func recentBaseline(before i: Int) -> Double {
        let scores = entries[max(1, i - 15)..<i].map(\.score).sorted()
        let observed = scores.isEmpty ? 0 : scores[scores.count / 2]
        return scores.count >= 5 ? observed : max(observed, baselineHint)
    }

    private func evaluate(_ i: Int) {
        guard i >= 1 else { return }
        let e = entries[i]
        // Fades through black: a dark stretch, then the picture comes back.
        if e.luma < settings.darkLuma {
            if darkStart == nil {
                darkStart = i
                lastBrightBeforeDark = entries[..<i].last(where: { $0.luma >= settings.brightLuma })?.time
            }
            darkEnd = i
        } else if let start = darkStart, let end = darkEnd {
            if e.luma >= settings.brightLuma {
                darkStart = nil
                darkEnd = nil
                if let from = lastBrightBeforeDark {
                    let before = entries[..<start].last(where: { $0.luma >= settings.brightLuma }) ?? entries[max(0, start - 1)]
                    addChange(SceneChange(time: entries[(start + end) / 2].time, kind: .fade, transitionStart: from,
                                          transitionEnd: e.time, strength: before.thumb.difference(to: e.thumb)))
                    gradualStart = nil
                    return
                }
            } else if e.time - entries[end].time > 2 {
                darkStart = nil  // it never came back: not a fade between two shots
                darkEnd = nil
            }
        }
        // Hard cuts.
        let around = neighbourMean(i)
        if e.score >= settings.minimumCut && e.score >= settings.adaptiveRatio * around {
            let isFlash = i + 1 < entries.count && entries[i - 1].thumb.difference(to: entries[i + 1].thumb) < 0.5 * e.score
            if !isFlash && darkStart == nil {
                gradualStart = nil
                addChange(SceneChange(time: e.time, kind: .cut, transitionStart: e.time, transitionEnd: e.time, strength: e.score))
                return
            }
        }
        // Dissolves.
        // Followed on the colour layout: a blend moves it steadily away from the frame before the
        // transition until the next shot is whole; shake and motion only jitter it.
        if let start = gradualStart {
            let distance = Self.layoutDistance(entries[i].layout, entries[start - 1].layout)
            if distance > gradualFarthest + 0.5 {
                gradualFarthest = distance
                gradualFarthestIndex = i
            }
            if i - gradualFarthestIndex >= 3 || e.time - entries[start].time > 3 {
                closeGradual(at: gradualFarthestIndex)
            }
        } else if e.layoutScore > max(0.8, 2 * recentLayoutBaseline(before: i))
                    && e.score > max(2.5, settings.gradualRise * recentBaseline(before: i)) && darkStart == nil {
            gradualStart = i
            gradualFarthest = Self.layoutDistance(e.layout, entries[i - 1].layout)
            gradualFarthestIndex = i
        }
    }

    static func layoutDistance(_ a: [Float], _ b: [Float]) -> Double {
        zip(a, b).reduce(0.0) { $0 + Double(abs($1.0 - $1.1)) } / Double(max(1, a.count))
    }

    /// Decides whether frames `gradualStart…end` were a dissolve, and where its middle is.
    private func closeGradual(at end: Int) {
        guard let start = gradualStart, end > start, start >= 1, end < entries.count else { gradualStart = nil; return }
        gradualStart = nil
        let a = entries[start - 1], b = entries[end]
        let length = end - start
        let span = a.thumb.difference(to: b.thumb)
        if VideoScanner.debug {
            FileHandle.standardError.write(Data(String(format: "gradual candidate %.3f–%.3f: %d frames, span %.1f\n", a.time, b.time, length, span).utf8))
        }
        guard length >= 3, b.time - a.time <= 3.0, span >= settings.minimumGradualSpan else { return }
        // Through black: a fade, placed in the middle of its darkest frames.
        let dark = (start..<end).filter { entries[$0].luma < settings.darkLuma }
        if let first = dark.first, let last = dark.last {
            guard a.luma >= settings.brightLuma, b.luma >= settings.brightLuma else { return }
            addChange(SceneChange(time: entries[(first + last) / 2].time, kind: .fade,
                                  transitionStart: a.time, transitionEnd: b.time, strength: span))
            return
        }
        // Into or out of black is half of a fade: the dark stretch places that change.
        if a.luma < settings.brightLuma || b.luma < settings.brightLuma { return }
        var residuals = 0.0
        var middle: Double?
        for k in start..<end {
            let (alpha, residual) = Self.blend(entries[k].layout, between: a.layout, and: b.layout)
            residuals += residual
            if middle == nil && alpha >= 0.5 { middle = entries[k].time }
        }
        if VideoScanner.debug {
            FileHandle.standardError.write(Data(String(format: "gradual %.3f–%.3f: %d frames, span %.1f, blend residual %.2f\n",
                                                       a.time, b.time, length, span, residuals / Double(length)).utf8))
        }
        guard residuals / Double(length) <= settings.maximumBlendResidual else { return }
        addChange(SceneChange(time: middle ?? entries[(start + end) / 2].time, kind: .dissolve,
                              transitionStart: a.time, transitionEnd: b.time, strength: span))
    }

    /// Records a cut found without decoding the frames around it (the encoder put a keyframe on it).
    func addKeyframeCut(time: Double, strength: Double) {
        addChange(SceneChange(time: time, kind: .cut, transitionStart: time, transitionEnd: time, strength: strength))
    }

    /// How well `f` is explained as `a + α(b − a)`: the best α and the residual relative to |b − a|.
    static func blend(_ f: [Float], between a: [Float], and b: [Float]) -> (alpha: Double, residual: Double) {
        var dot = 0.0, norm = 0.0, span = 0.0
        for i in f.indices {
            let d = Double(b[i] - a[i])
            dot += Double(f[i] - a[i]) * d
            norm += d * d
            span += abs(d)
        }
        guard norm > 0 else { return (0, 1) }
        let alpha = max(0, min(1, dot / norm))
        var residual = 0.0
        for i in f.indices { residual += abs(Double(f[i]) - (Double(a[i]) + alpha * Double(b[i] - a[i]))) }
        return (alpha, residual / max(span, 1))
    }

    private func addChange(_ change: SceneChange) {
        // A gradual change can begin with a step large enough to pass for a cut: it replaces that cut.
        if change.kind != .cut, let last = changes.last, last.kind == .cut,
           last.time >= change.transitionStart - 0.05, last.time <= change.transitionEnd {
            changes[changes.count - 1] = change
            return
        }
        if let last = changes.last, change.time - last.time < 0.4 {
            if change.strength > last.strength && last.kind == .cut && change.kind == .cut { changes[changes.count - 1] = change }
            return
        }
        changes.append(change)
    }
}
