import Foundation
import MomentsSupport

/// Chooses the segments of a highlight from an analysis.
///
/// Candidates are windows of 2–6 s inside a shot, whose edges sit on a cut or at least half a second
/// away from one. They are taken greedily by score, discounted for looking like or sitting close to
/// segments already taken and rewarded for covering a part of the timeline not yet covered; then
/// their lengths are fitted so the total lands on the target. Same analysis and target, same answer.
/// `SegmentRules` (the user's segment choices) bound the lengths and the count.
public enum SegmentSelector {
    static let minimumLength = SegmentRules.standard.shortest
    static let maximumLength = SegmentRules.standard.longest
    static let step = 0.5
    static let edgeMargin = 0.5
    public static let tolerance = 0.5

    public static func select(from analysis: Analysis, target: Double, rules: SegmentRules = .standard) -> Selection {
        let duration = analysis.info.duration
        let shots = analysis.shots
        // Where someone speaks, the windows whose edges fall in pauses come first; the others stay
        // as a last resort, at half their score, their edges moved into pauses once chosen.
        let pauses = SpeechPauses(analysis.speech)
        let points = pauses.isEmpty ? [] : pauses.edgePoints(shots: shots, duration: duration, longest: rules.longest)
        var candidates = makeCandidates(analysis, rules: rules)
        if !points.isEmpty {
            candidates =
                speechCandidates(analysis, points: points, rules: rules)
                + candidates.map { c in
                    var c = c
                    if !pauses.keepsWhole(c.start) || !pauses.keepsWhole(c.end) { c.score *= 0.5 }
                    return c
                }
        }
        let topCandidates = Array(candidates.sorted { ($0.score, -$0.start) > ($1.score, -$1.start) }.prefix(20))
        var target = target
        if duration <= target + tolerance {
            let usable = usableParts(of: analysis)
            // A short source is shown whole, unless the user's choices ask for cuts: then as much
            // of its usable footage as those allow.
            if rules.admits(usable, slack: SegmentRules.slack(for: analysis)) { return Selection(segments: usable, candidates: topCandidates) }
            target = min(target, usable.reduce(0) { $0 + $1.duration })
        }
        var chosen: [Segment] = []
        // The share of each candidate's seconds that show a face, and whether each chosen segment does.
        let shares = candidates.map { faceShare(analysis, $0) }
        var chosenShowsFaces: [Bool] = []
        var total = 0.0
        let bins = max(3, Int(saturating: (target / 4).rounded()))
        var covered = Set<Int>()
        func bin(_ s: Segment) -> Int { min(bins - 1, max(0, Int(saturating: (s.start + s.end) / 2 / duration * Double(bins)))) }
        let tau = max(0.5, 0.5 * duration / target)

        while target - total > tolerance, chosen.count < rules.count ?? .max {
            let remaining = target - total
            var best: (value: Double, segment: Segment, showsFaces: Bool)?
            // No scene twice: a candidate a moment from a chosen segment, or a near-duplicate of
            // one, counts as that segment again; taken only when nothing else is left.
            for allowingRepeats in [false, true] where best == nil {
                for (c, people) in zip(candidates, shares) where c.duration <= remaining + tolerance || remaining >= rules.longest {
                    if chosen.contains(where: { c.start < $0.end + 0.25 && $0.start < c.end + 0.25 }) { continue }
                    if !allowingRepeats, chosen.contains(where: { isRepeat(c, of: $0, in: analysis) }) { continue }
                    var redundancy = 0.0
                    for s in chosen {
                        let gap = max(0, max(s.start - c.end, c.start - s.end))
                        let near = exp(-gap / tau)
                        let alike = similarity(analysis, c, s) * (c.shot == s.shot ? 1 : 0.85)
                        redundancy = max(redundancy, max(near, alike * alike))
                    }
                    let coverage = covered.contains(bin(c)) ? 0 : 0.15
                    // People first, and different people: faces a chosen segment already shows
                    // count against a candidate, new ones for it.
                    var variety = 0.0
                    if people > 0 {
                        let seen = zip(chosen, chosenShowsFaces).contains { $0.1 && showSamePeople(analysis, c, $0.0) }
                        variety = people * (seen ? -peopleVariety : peopleVariety)
                    }
                    let value = c.score * (1 - 0.7 * redundancy) + coverage + variety + 0.01 * c.duration
                    if best == nil || value > best!.value + 1e-9 { best = (value, c, people > 0) }
                }
            }
            guard let best else { break }
            var pick = best.segment
            pick.reasons = reasons(for: pick, in: analysis, newCoverage: !covered.contains(bin(pick)))
            chosen.append(pick)
            chosenShowsFaces.append(best.showsFaces)
            covered.insert(bin(pick))
            total += pick.duration
        }
        chosen.sort { $0.start < $1.start }
        var moved = 0
        if points.isEmpty {
            chosen = fitted(chosen, to: target, analysis: analysis, rules: rules)
        } else {
            // No edge inside an utterance: the lengths and the total are fitted from pause to pause.
            (chosen, moved) = placeEdgesInPauses(chosen, pauses: pauses, points: points, analysis: analysis, target: target, rules: rules)
        }
        chosen = snap(chosen, to: analysis.frameTimes, target: target, shots: shots, rules: rules, allows: pauses.keepsWhole)
        // Nothing fits the rules (its usable parts are shorter than the shortest segment allowed):
        // the best stretch of the length the rules and the target agree on, cuts or not.
        if chosen.isEmpty {
            chosen = snap(
                [bestWindow(analysis, length: max(rules.shortest, min(target, rules.longest)))], to: analysis.frameTimes,
                target: nil, shots: shots, rules: rules)
        }
        var selection = Selection(segments: chosen, candidates: topCandidates)
        selection.pauses = pauses
        selection.edgesMovedIntoPauses = moved
        return selection
    }

    // MARK: Candidates

    /// A segment that spans cuts (its `shot`): chosen only where no shot is as long as the user's
    /// shortest segment, and bounded by the video alone.
    static let acrossShots = -1

    static func makeCandidates(_ analysis: Analysis, rules: SegmentRules = .standard) -> [Segment] {
        var result: [Segment] = []
        var spans = analysis.shots.enumerated().filter { $0.element.duration >= rules.shortest }.map { ($0.offset, $0.element) }
        // No shot is as long as the shortest segment the user allows: the windows cross cuts.
        if spans.isEmpty { spans = [(acrossShots, Shot(start: 0, end: analysis.info.duration))] }
        for (index, shot) in spans where shot.duration >= rules.shortest {
            var seen = Set<String>()
            for length in rules.lengths where length <= shot.duration + 1e-9 {
                var start = shot.start
                while start + length <= shot.end + 1e-9 {
                    var s = start, e = start + length
                    if s - shot.start < edgeMargin { s = shot.start; e = s + length }
                    if shot.end - e < edgeMargin { e = shot.end; s = max(shot.start, e - length) }
                    let key = "\(Int(saturating: s * 1000))-\(Int(saturating: e * 1000))"
                    if seen.insert(key).inserted {
                        result.append(Segment(start: s, end: e, score: meanScore(analysis, s, e), reasons: [], shot: index))
                    }
                    start += step
                }
            }
        }
        return result
    }

    static func meanScore(_ analysis: Analysis, _ start: Double, _ end: Double) -> Double {
        var sum = 0.0, weight = 0.0
        for f in analysis.seconds(overlapping: start, end) {
            let overlap = min(end, f.time + 1) - max(start, f.time)
            sum += f.score * overlap
            weight += overlap
        }
        return weight > 0 ? sum / weight : 0
    }

    /// Gaps shorter than this between two segments make them one moment shown twice.
    static let momentApart = 1.0
    /// Pictures at least this alike (`similarity`) are the same scene.
    static let nearDuplicate = 0.9

    /// Whether `candidate` shows what `chosen` shows: the same shot a moment before or after it, or
    /// a near-duplicate picture.
    static func isRepeat(_ candidate: Segment, of chosen: Segment, in analysis: Analysis) -> Bool {
        let gap = max(chosen.start - candidate.end, candidate.start - chosen.end)
        return gap < momentApart || similarity(analysis, candidate, chosen) >= nearDuplicate
    }

    /// What showing people not yet shown adds to a candidate's value (and showing them again takes off).
    static let peopleVariety = 0.1

    /// The share of `segment`'s seconds that show a face.
    static func faceShare(_ analysis: Analysis, _ segment: Segment) -> Double {
        let seconds = analysis.seconds(overlapping: segment.start, segment.end)
        return seconds.isEmpty ? 0 : Double(seconds.filter { $0.faces > 0 }.count) / Double(seconds.count)
    }

    /// Whether two segments that both show faces show the same people, as far as the pictures tell
    /// without telling faces apart: they are in one shot or in shots that look alike.
    static func showSamePeople(_ analysis: Analysis, _ a: Segment, _ b: Segment) -> Bool {
        (a.shot == b.shot && a.shot != acrossShots) || similarity(analysis, a, b) >= 0.8
    }

    static func similarity(_ analysis: Analysis, _ a: Segment, _ b: Segment) -> Double {
        func signature(_ s: Segment) -> [Float] {
            let second = min(analysis.signatures.count - 1, max(0, Int(saturating: (s.start + s.end) / 2)))
            return second >= 0 ? analysis.signatures[second] : []
        }
        let x = signature(a), y = signature(b)
        guard !x.isEmpty, x.count == y.count else { return 0 }
        let d = zip(x, y).reduce(0.0) { $0 + Double(abs($1.0 - $1.1)) } / Double(x.count)
        return max(0, 1 - d / 40)
    }

    static func reasons(for segment: Segment, in analysis: Analysis, newCoverage: Bool) -> [String] {
        let seconds = analysis.seconds(overlapping: segment.start, segment.end)
        guard !seconds.isEmpty else { return ["fills the highlight"] }
        var reasons: [String] = []
        let peakExcitement = seconds.map(\.excitement).max() ?? 0
        let loudest = seconds.map(\.loudness).max() ?? AudioFeatures.silence
        if analysis.info.hasAudio && peakExcitement >= 1.5 {
            let audible = analysis.seconds.map(\.loudness).filter { $0 > AudioFeatures.silence }.sorted()
            let usual = audible.isEmpty ? loudest : audible[audible.count / 2]
            reasons.append(String(format: "loud moment (%.0f dB above this video's usual level)", loudest - usual))
        }
        let onsets = seconds.map(\.onsets).reduce(0, +)
        if onsets >= 2 { reasons.append("\(onsets) sudden sounds (claps, hits, shouts)") }
        let faces = seconds.map(\.faces).max() ?? 0
        if faces > 0, 2 * seconds.filter({ $0.faces > 0 }).count >= seconds.count {
            reasons.append(faces == 1 ? "a face in view" : "\(faces) faces in view")
        }
        let spoken = seconds.reduce(0) { $0 + $1.speech }
        if spoken >= 1 { reasons.append(String(format: "someone speaks (%.1f s)", spoken)) }
        let motion = seconds.map(\.motion).max() ?? 0
        if motion >= 4 { reasons.append(String(format: "fast action (%.0f%% of the frame per second)", motion)) }
        let activity = seconds.map(\.activity).max() ?? 0
        if activity >= 3 && motion < 4 { reasons.append("lively picture") }
        if seconds.allSatisfy({ $0.shake < 5 }) && (seconds.map(\.cameraMotion).max() ?? 0) >= 2 { reasons.append("smooth camera move") }
        if newCoverage { reasons.append(String(format: "covers the video around %@", clock(segment.start))) }
        if reasons.isEmpty { reasons.append("steady, well-exposed shot") }
        return reasons
    }

    static func clock(_ t: Double) -> String { String(format: "%d:%02d", Int(saturating: t) / 60, Int(saturating: t) % 60) }

    /// The best-scoring stretch of `length` seconds (the whole video when it is shorter), across cuts.
    static func bestWindow(_ analysis: Analysis, length: Double) -> Segment {
        let duration = analysis.info.duration
        guard length < duration else {
            return Segment(start: 0, end: duration, score: meanScore(analysis, 0, duration), reasons: ["the whole video"], shot: acrossShots)
        }
        var best = Segment(start: 0, end: length, score: meanScore(analysis, 0, length), reasons: ["fills the highlight"], shot: acrossShots)
        var start = step
        while start + length <= duration + 1e-9 {
            let score = meanScore(analysis, start, start + length)
            if score > best.score { best = Segment(start: start, end: start + length, score: score, reasons: best.reasons, shot: acrossShots) }
            start += step
        }
        return best
    }

    // MARK: Short sources

    /// The whole video minus transitions and unusable stretches (dark, blurred, frozen) of a second or more.
    static func usableParts(of analysis: Analysis) -> [Segment] {
        var parts: [Segment] = []
        for (index, shot) in analysis.shots.enumerated() {
            var runStart: Double? = nil
            var t = shot.start
            let seconds = analysis.seconds
            while t < shot.end {
                let f = seconds[min(seconds.count - 1, max(0, Int(saturating: t)))]
                let next = min(shot.end, Double(Int(saturating: t)) + 1)
                if f.isUsable {
                    if runStart == nil { runStart = t }
                } else if let s = runStart {
                    parts.append(Segment(start: s, end: t, score: meanScore(analysis, s, t), reasons: ["usable footage"], shot: index))
                    runStart = nil
                }
                t = next
            }
            if let s = runStart {
                parts.append(Segment(start: s, end: shot.end, score: meanScore(analysis, s, shot.end), reasons: ["usable footage"], shot: index))
            }
        }
        parts = parts.filter { $0.duration >= 0.5 }
        if parts.isEmpty {
            parts = [
                Segment(
                    start: 0, end: analysis.info.duration, score: meanScore(analysis, 0, analysis.info.duration),
                    reasons: ["the whole video"], shot: 0)
            ]
        }
        return snap(parts, to: analysis.frameTimes, target: nil, shots: analysis.shots, rules: .standard)
    }

    // MARK: Fitting the total

    /// The greedy pass's segments, their lengths fitted so the total is the target: grown or
    /// shrunk inside their shots, new ones in the free stretches, laid out afresh when the target
    /// asks for nearly all the footage.
    static func fitted(_ segments: [Segment], to target: Double, analysis: Analysis, rules: SegmentRules) -> [Segment] {
        let shots = analysis.shots, duration = analysis.info.duration
        var chosen = fit(segments, to: target, shots: shots, duration: duration, rules: rules)
        chosen = fill(chosen, to: target, analysis: analysis, rules: rules)
        // Still short: no free stretch holds the user's shortest segment where the greedy pass
        // left its segments. The target asks for nearly all the footage: lay the segments out afresh.
        if target - chosen.reduce(0, { $0 + $1.duration }) > tolerance, rules.floorIsPromise,
            let packed = pack(to: target, analysis: analysis, rules: rules),
            abs(packed.reduce(0, { $0 + $1.duration }) - target) < abs(chosen.reduce(0, { $0 + $1.duration }) - target)
        {
            chosen = packed
        }
        // A filler no shorter than the user's shortest segment may overshoot: shrink the others
        // back towards their shortest.
        if chosen.reduce(0, { $0 + $1.duration }) > target + tolerance {
            chosen = fit(chosen, to: target, shots: shots, duration: duration, rules: rules)
        }
        return chosen
    }

    /// Lengthens (or shortens) segments inside their shots until the total is the target.
    static func fit(
        _ segments: [Segment], to target: Double, shots: [Shot], duration: Double,
        rules: SegmentRules = .standard
    ) -> [Segment] {
        var result = segments
        var delta = target - result.reduce(0) { $0 + $1.duration }
        // Grow: end first (towards the next cut), then start, never into a neighbour.
        var pass = 0
        while delta > 0.01 && pass < 4 {
            pass += 1
            for i in result.indices.sorted(by: { result[$0].score > result[$1].score }) where delta > 0.01 {
                let shot = shots.indices.contains(result[i].shot) ? shots[result[i].shot] : Shot(start: 0, end: duration)
                // A neighbour in the same shot stays a moment away (else it is that shot shown twice).
                func spacing(_ j: Int) -> Double { result[j].shot == result[i].shot && result[i].shot != acrossShots ? momentApart : 0.25 }
                let nextStart = i + 1 < result.count ? result[i + 1].start - spacing(i + 1) : duration
                let previousEnd = i > 0 ? result[i - 1].end + spacing(i - 1) : 0
                let cap = pass <= 2 || rules.capsEveryPass ? rules.longest : .infinity
                let roomEnd = max(0, min(shot.end, nextStart) - result[i].end)
                let grow = min(delta, roomEnd, max(0, cap - result[i].duration))
                result[i].end += grow
                delta -= grow
                let roomStart = max(0, result[i].start - max(shot.start, previousEnd))
                let growStart = min(delta, roomStart, max(0, cap - result[i].duration))
                result[i].start -= growStart
                delta -= growStart
            }
        }
        // Still short by more than the tolerance: the shots are full, or fewer segments are allowed
        // than the target needs. Segments grow across cuts then, up to their neighbours.
        if delta > tolerance {
            for i in result.indices.sorted(by: { result[$0].score > result[$1].score }) where delta > 0.01 {
                let cap = rules.capsEveryPass ? rules.longest : .infinity
                let nextStart = i + 1 < result.count ? result[i + 1].start : duration
                let previousEnd = i > 0 ? result[i - 1].end : 0
                let grow = min(delta, max(0, nextStart - result[i].end), max(0, cap - result[i].duration))
                result[i].end += grow
                delta -= grow
                let growStart = min(delta, max(0, result[i].start - previousEnd), max(0, cap - result[i].duration))
                result[i].start -= growStart
                delta -= growStart
                if grow + growStart > 0 { result[i].shot = acrossShots }
            }
        }
        // Shrink from the weakest segment's end while too long.
        for i in result.indices.sorted(by: { result[$0].score < result[$1].score }) where delta < -0.01 {
            let cut = min(-delta, max(0, result[i].duration - rules.shortest))
            result[i].end -= cut
            delta += cut
        }
        return result
    }

    /// Still short by more than the tolerance once the segments grew as far as the rules let them
    /// (segments no longer than `max_segment` cannot fill the target from where the greedy pass
    /// left them): new segments in the free stretches, cuts or not, each the best-scoring window
    /// of the largest stretch, until the target is reached, the count runs out, or no stretch
    /// holds a segment as long as the rules' shortest.
    static func fill(_ segments: [Segment], to target: Double, analysis: Analysis, rules: SegmentRules) -> [Segment] {
        var result = segments.sorted { $0.start < $1.start }
        var delta = target - result.reduce(0) { $0 + $1.duration }
        while delta > tolerance, result.count < rules.count ?? .max {
            var gaps: [(start: Double, end: Double, at: Int)] = []
            var previous = 0.0
            for (index, segment) in result.enumerated() {
                gaps.append((previous, segment.start, index))
                previous = segment.end
            }
            gaps.append((previous, analysis.info.duration, result.count))
            guard let gap = gaps.max(by: { $0.end - $0.start < $1.end - $1.start }) else { break }
            // Where no stretch holds the shortest segment the engine likes and the user set no
            // minimum, the stretches left are used as they are (down to a quarter second): the
            // target is nearly the whole video.
            let shortest = rules.floorIsPromise ? rules.shortest : min(rules.shortest, max(0.25, gap.end - gap.start))
            let length = min(max(delta, shortest), rules.longest, gap.end - gap.start)
            guard length >= shortest - 1e-6 else { break }
            var best = Segment(
                start: gap.start, end: gap.start + length, score: meanScore(analysis, gap.start, gap.start + length),
                reasons: ["fills the highlight"], shot: acrossShots)
            var start = gap.start + step
            while start + length <= gap.end + 1e-9 {
                let score = meanScore(analysis, start, start + length)
                if score > best.score { (best.start, best.end, best.score) = (start, start + length, score) }
                start += step
            }
            result.insert(best, at: gap.at)
            delta -= length
        }
        return result
    }

    /// As many segments as the shots hold, each as long as the rules allow, a quarter second apart:
    /// the layout that comes nearest a target that asks for nearly all the footage under a user's
    /// shortest segment (where the greedy pass's long windows leave no gap as long as that
    /// shortest segment). When the shots cannot hold
    /// the target, the whole video is laid out, cuts or not. With `max_segments`, the longest
    /// segments are kept. Nil when nothing fits.
    static func pack(to target: Double, analysis: Analysis, rules: SegmentRules) -> [Segment]? {
        let gap = 0.25
        func layout(_ spans: [(index: Int, shot: Shot)]) -> [Segment] {
            var slots: [Segment] = []
            for (index, shot) in spans {
                let length = shot.duration
                let most = Int(saturating: ((length + gap) / (rules.shortest + gap) + 1e-9).rounded(.down))
                guard most >= 1 else { continue }
                // k segments hold k × longest, or the shot less its k - 1 gaps; the best k.
                func holds(_ k: Int) -> Double { min(Double(k) * rules.longest, length - Double(k - 1) * gap) }
                let k: Int = (1...most).max { holds($0) < holds($1) } ?? 1
                let each: Double = min(rules.longest, (length - Double(k - 1) * gap) / Double(k))
                for n in 0..<k {
                    let start = shot.start + Double(n) * (each + gap)
                    slots.append(
                        Segment(
                            start: start, end: start + each, score: meanScore(analysis, start, start + each),
                            reasons: [], shot: index))
                }
            }
            if let count = rules.count, slots.count > count {
                slots = Array(slots.sorted { ($0.duration, $0.score) > ($1.duration, $1.score) }.prefix(count))
            }
            return slots.sorted { $0.start < $1.start }.map { slot in
                var slot = slot
                slot.reasons = reasons(for: slot, in: analysis, newCoverage: false) + ["fills the highlight"]
                return slot
            }
        }
        let total = { (segments: [Segment]) in segments.reduce(0) { $0 + $1.duration } }
        var packed = layout(analysis.shots.enumerated().map { ($0.offset, $0.element) })
        if target - total(packed) > tolerance {
            let whole = layout([(acrossShots, Shot(start: 0, end: analysis.info.duration))])
            if total(whole) > total(packed) { packed = whole }
        }
        return packed.isEmpty ? nil : packed
    }

    /// Puts every edge on a frame (start on a frame, end on the frame after the last one shown) and
    /// corrects the total for the rounding.
    /// `allows`: where an end may go to correct the total (not into speech).
    static func snap(
        _ segments: [Segment], to frames: [Double], target: Double?, shots: [Shot],
        rules: SegmentRules = .standard, allows: (Double) -> Bool = { _ in true }
    ) -> [Segment] {
        guard !frames.isEmpty else { return segments }
        func frameAtOrAfter(_ t: Double) -> Double {
            let index = frames.firstIndex(atOrAfter: t)
            return index < frames.count ? frames[index] : (frames.last! + (frames.count > 1 ? frames.last! - frames[frames.count - 2] : 1.0 / 30))
        }
        var result = segments.map { s -> Segment in
            var s = s
            s.start = frameAtOrAfter(s.start)
            s.end = max(s.start, frameAtOrAfter(s.end))
            return s
        }.filter { $0.duration > 0 }
        guard let target, !result.isEmpty else { return result }
        // Rounding error of up to a frame per segment: put it right on the longest segment.
        let total = result.reduce(0) { $0 + $1.duration }
        if abs(total - target) > 0.25, let i = result.indices.max(by: { result[$0].duration < result[$1].duration }) {
            let wanted = result[i].end + (target - total)
            var limit = i + 1 < result.count ? result[i + 1].start : frameAtOrAfter(.infinity)
            if rules.capsEveryPass { limit = min(limit, frameAtOrAfter(result[i].start + rules.longest)) }
            let end = max(result[i].start + rules.shortest, min(limit, frameAtOrAfter(wanted)))
            if allows(end) { result[i].end = end }
        }
        return result
    }
}
