import Foundation
import Media
import MomentsSupport

/// Turns the scanners' raw observations into per-second features, shots and scores.
enum FeatureTimeline {
    /// What a second full of speech adds to its score: a reason to pick it, not a rule.
    static let speechBonus = 0.15
    /// What a second that clearly shows a face adds to its score: people first.
    static let faceBonus = 0.2
    /// How far from a second the picture searched for its faces may be. Pictures are searched
    /// every other second where GOPs are short; where they are longer only keyframes are, and a
    /// GOP of up to 8 s still gives every second of its shot the faces of its keyframe.
    static let farthestLook = 4.0

    static func build(
        info: MediaInfo, origin: Double, frameTimes: [Double], video: VideoScanner,
        audio: AudioScanner?
    ) -> Analysis {
        let duration = info.duration
        let count = max(1, Int(duration.rounded(.up)))
        let samples = video.samples.map { sample -> SampleFeatures in
            var s = sample
            s.time -= origin
            return s
        }

        // Camera shake: how far each sample's camera motion strays from its neighbours' average.
        var shakes = [Double](repeating: 0, count: samples.count)
        for k in samples.indices {
            guard let m = samples[k].motion else { continue }
            let neighbours = [k - 1, k + 1].filter { samples.indices.contains($0) }.compactMap { samples[$0].motion }
            guard !neighbours.isEmpty else { continue }
            let ax = neighbours.map(\.cameraX).reduce(0, +) / Double(neighbours.count)
            let ay = neighbours.map(\.cameraY).reduce(0, +) / Double(neighbours.count)
            shakes[k] = ((m.cameraX - ax) * (m.cameraX - ax) + (m.cameraY - ay) * (m.cameraY - ay)).squareRoot()
        }
        let sharpnessValues = samples.map(\.sharpness).filter { $0 > 0 }.sorted()
        let typicalSharpness = sharpnessValues.isEmpty ? 1 : max(1e-6, sharpnessValues[sharpnessValues.count / 2])
        let bytes = (0..<count).map { second -> Double in
            let absolute = Int(saturating: (Double(second) + origin).rounded(.down))
            return absolute >= 0 && absolute < video.bytesPerSecond.count ? Double(video.bytesPerSecond[absolute]) : 0
        }
        let sortedBytes = bytes.filter { $0 > 0 }.sorted()
        let typicalBytes = sortedBytes.isEmpty ? 1 : max(1, sortedBytes[sortedBytes.count / 2])
        let sound = audio.map { AudioFeatures(energies: $0.energies, startTime: $0.startTime - origin, seconds: count) }
        let speech = (audio?.speech.spans(startTime: audio!.startTime - origin) ?? []).compactMap { span -> SpeechSpan? in
            let clipped = SpeechSpan(start: max(0, span.start), end: min(duration, span.end), fall: span.fall)
            return clipped.duration > 0 ? clipped : nil
        }
        func speechShare(_ second: Int) -> Double {
            speech.reduce(0) { $0 + max(0, min(Double(second + 1), $1.end) - max(Double(second), $1.start)) }
        }

        func nearestSample(_ t: Double) -> Int? {
            guard !samples.isEmpty else { return nil }
            var lo = 0, hi = samples.count - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if samples[mid].time < t { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 && abs(samples[lo - 1].time - t) <= abs(samples[lo].time - t) { return lo - 1 }
            return lo
        }

        var seconds: [SecondFeatures] = []
        var signatures: [[Float]] = []
        for second in 0..<count {
            let centre = Double(second) + 0.5
            let k = nearestSample(centre)
            let s = k.map { samples[$0] }
            let motion = s?.motion?.local ?? 0
            let camera = s?.motion?.camera ?? 0
            let activity = s?.activity ?? 0
            let sharp = s.map { $0.sharpness / typicalSharpness } ?? 1
            let isStatic = (s?.activity ?? 0) < 0.25 && motion < 0.3 && camera < 0.3 && bytes[second] < 0.15 * typicalBytes
            var feature = SecondFeatures(
                time: Double(second), motion: motion, cameraMotion: camera, shake: k.map { shakes[$0] } ?? 0,
                activity: activity, bitrateRatio: bytes[second] / typicalBytes,
                loudness: sound?.loudness[second] ?? AudioFeatures.silence, excitement: sound?.excitement[second] ?? 0,
                onsets: sound?.onsets[second] ?? 0, speech: speechShare(second), brightness: s?.brightness ?? 128, sharpness: sharp,
                isStatic: isStatic, score: 0)
            feature.score = score(feature, hasAudio: sound != nil)
            seconds.append(feature)
            signatures.append(s?.signature ?? [])
        }

        let changes = video.sceneChanges.map { change -> SceneChange in
            var c = change
            c.time -= origin
            c.transitionStart -= origin
            c.transitionEnd -= origin
            return c
        }.filter { $0.time > 0.05 && $0.time < duration - 0.05 }
        var shots: [Shot] = []
        var start = 0.0
        for change in changes {
            let end = change.kind == .cut ? change.time : max(start, change.transitionStart)
            if end > start { shots.append(Shot(start: start, end: end)) }
            start = change.kind == .cut ? change.time : min(duration, change.transitionEnd)
        }
        if duration > start { shots.append(Shot(start: start, end: duration)) }

        // Each second shows the faces of the picture looked at nearest its middle, in the same shot
        // (a face seen before a cut is not in the shot after it) and within `farthestLook`.
        let looked = samples.filter { $0.faces != nil }, lookTimes = looked.map(\.time)
        let shotStarts = shots.map(\.start)
        func shotIndex(_ t: Double) -> Int { max(0, shotStarts.firstIndex(atOrAfter: t + 2e-6) - 1) }
        var faces: [[FaceBox]] = []
        for second in seconds.indices {
            let centre = Double(second) + 0.5, shot = shotIndex(centre)
            let near =
                lookTimes.firstIndex(atOrAfter: centre - Self.farthestLook)..<lookTimes.firstIndex(atOrAfter: centre + Self.farthestLook + 1e-6)
            let look = looked[near].filter { shotIndex($0.time) == shot }.min { abs($0.time - centre) < abs($1.time - centre) }
            let seen = look?.faces ?? []
            faces.append(seen)
            guard !seen.isEmpty else { continue }
            seconds[second].faces = seen.count
            seconds[second].faceSize = seen.map(\.size).max() ?? 0
            seconds[second].faceClarity = seen.map { clarity(of: $0, sharpness: seconds[second].sharpness) }.max() ?? 0
            seconds[second].score = score(seconds[second], hasAudio: sound != nil)
        }
        var analysis = Analysis(
            info: info, origin: origin, changes: changes, shots: shots, seconds: seconds, speech: speech,
            frameTimes: frameTimes, packets: video.packets, signatures: signatures,
            decodedFrames: video.decodedFrames, totalFrames: frameTimes.count)
        analysis.faces = faces
        return analysis
    }

    /// How clearly a face shows (0…1): its size (full from a quarter of the shorter side), its
    /// place (halved at the picture's edge) and the picture's sharpness (against the video's usual).
    static func clarity(of face: FaceBox, sharpness: Double) -> Double {
        let size = min(1, face.size / 0.25)
        let offCentre = min(1, 2 * max(abs(face.centreX - 0.5), abs(face.centreY - 0.5)))
        return size * (1 - 0.5 * offCentre) * min(1, max(0, sharpness))
    }

    /// Interest of a second (0…1): lively motion and picture change, loud and percussive sound,
    /// someone speaking (a bonus of up to `speechBonus`), a clear face (up to `faceBonus`), held down when the picture is dark,
    /// blown out, blurred, frozen or shaking.
    static func score(_ f: SecondFeatures, hasAudio: Bool) -> Double {
        let motion = min(1, f.motion / 8)
        let activity = min(1, f.activity / 6)
        let bits = min(1, max(0, f.bitrateRatio - 0.8) / 2)
        var base: Double
        if hasAudio {
            let excitement = 1 / (1 + exp(-(f.excitement - 1)))
            let onsets = min(1, Double(f.onsets) / 3)
            base = 0.25 * motion + 0.15 * activity + 0.10 * bits + 0.35 * excitement + 0.15 * onsets
        } else {
            base = 0.45 * motion + 0.30 * activity + 0.25 * bits
        }
        base += speechBonus * f.speech + faceBonus * f.faceClarity
        let quality = f.isUsable ? 1.0 : 0.2
        let steadiness = 1 - min(0.5, f.shake / 20)
        return max(0, min(1, base * quality * steadiness))
    }
}
