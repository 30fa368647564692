import Foundation
import Media

/// Decoding every frame of the GOPs where a change may be, and handing the runs to the detector.
extension VideoScanner {
    // MARK: Dense decoding

    enum DenseEnding { case whole, stopped, beganMidChange, probed }

    /// Decodes a GOP's packets frame by frame into the detector. Once a change has been found (or
    /// `settledAtStart`: there was nothing to find between the GOP's keyframes but the spike),
    /// every large step has been judged, no gradual change is under way, the spike's frame (at
    /// `spikeTime`) is behind, and the picture already looks like the next keyframe (no trigger
    /// would fire between the two), the rest of the GOP holds no change: the run ends there
    /// (`.stopped`). Otherwise the GOP is decoded to its end: the keyframes' difference may be a
    /// slow dissolve that no stretch of it shows.
    ///
    /// Packets before `anchorsUntil` are decoded without their non-reference pictures, and the run
    /// starts at the first frame after which none is missing.
    /// `checkingStart`: stop with `.beganMidChange` when the run's first frames were already in a
    /// dissolve or fade (judged over its first few frames, and over more when those blend a little).
    /// `probingThrough`: once the frame shown then has been decoded, stop with `.probed`, the run
    /// and what it found forgotten, unless one step of the run so far stands out from the others.
    /// `laterSpikes`: packets (offsets in `packets`) of a long GOP's other spikes. Where the run
    /// would end before one, it goes on to it; further than a cut window ahead, it ends there and
    /// begins again a cut window before the spike, reached over the anchors (whose motion gives
    /// the new run its baseline: the run's own may have been measured in another shot).
    func decodeDense(
        _ packets: ArraySlice<Packet>, towards next: VideoSample?, after spikeTime: Double,
        anchorsUntil: Int, settledAtStart: Bool, checkingStart: Bool, probingThrough: Double? = nil,
        laterSpikes: [Int] = []
    ) throws -> DenseEnding {
        var probe = probingThrough
        // The frames over which the run's start is judged next, while it is.
        var startCheck: Int? = checkingStart ? SceneDetector.startFrames : nil
        var changesBefore = detector.changeCount
        var settledAtStart = settledAtStart
        var spikeTime = spikeTime
        var pendingSpikes = laterSpikes[...]
        // Packets in `anchors` are decoded without their non-reference pictures.
        var anchors = 1..<max(1, anchorsUntil)
        if anchorsUntil > 0 { densePushFrom = pushStart(after: packets.prefix(anchorsUntil)) }
        defer {
            densePushFrom = -.infinity
            dense?.skipsNonReferencePictures = false
            resumedRun = nil
        }
        for (k, packet) in packets.enumerated() {
            if let dense { dense.skipsNonReferencePictures = anchors.contains(k) }
            try decodeDense(packet)
            if let through = probe, let last = lastDenseThumbnail, last.time >= through - 0.5 * nominalInterval {
                probe = nil
                if Self.debug {
                    let steps = detector.entries.dropFirst().map { String(format: "%.1f", $0.step) }.joined(separator: ",")
                    FileHandle.standardError.write(Data(String(format: "probe through %.3f: steps %@\n", through, steps).utf8))
                }
                if !detector.hasLoneStep(atLeast: settings.activityJumpFloor) {
                    detector.discardRun()
                    closeRun()
                    return .probed
                }
            }
            // (The least a judgement needs first: `frames` frames and two more.)
            if let frames = startCheck, detector.runLength > frames + 2,
                let from = detector.runStartJudgedFrom(burstsUpTo: settings.longestStartBurst)
            {
                // Out of a burst of motion, over the slow judgement's frames, or over as many as the
                // GOP has shown by its last packet (the decoder holds a few back): the first frames
                // after a whip pan still carry its blur, too much for a short blend to fit.
                let shown = k == packets.count - 1 ? detector.runLength - from - 3 : .max
                let over = from == 0 ? frames : min(SceneDetector.slowStartFrames, shown)
                if over >= frames, detector.runLength > from + over + 2 {
                    if Self.debug, from > 0 {
                        FileHandle.standardError.write(
                            Data("run start judged from its frame \(from), after a burst of motion, over \(over) frames\n".utf8))
                    }
                    if detector.runBeganMidChange(from: from, over: over) { return .beganMidChange }
                    startCheck = over == SceneDetector.startFrames && detector.startBlendsSlowly(from: from) ? SceneDetector.slowStartFrames : nil
                }
            }
            guard startCheck == nil, k < packets.count - 1, settledAtStart || detector.changeCount > changesBefore, let next,
                let last = lastDenseThumbnail, last.time > spikeTime, detector.isSettled,
                looksAlike(last.thumb, next.thumbnail)
            else { continue }
            while let first = pendingSpikes.first, first <= k || packets[packets.startIndex + first].pts.map(stream.seconds) ?? .infinity <= last.time
            {
                pendingSpikes.removeFirst()
            }
            if let spike = pendingSpikes.first {
                // A spike still ahead: the run goes on to it. Where it lies further than a cut window,
                // the run ends here and starts again a cut window before it, over the anchors.
                spikeTime = packets[packets.startIndex + spike].pts.map(stream.seconds) ?? .infinity
                changesBefore = detector.changeCount
                settledAtStart = true
                let resume = spike - settings.spikeLookBackPackets
                if resume > k + 1 {
                    // The run begins again where its first frame is pushed, its baseline measured
                    // on the anchors decoded on the way (the motion there).
                    resumedRun = (fallback: detector.recentBaseline, activities: [], lastAnchor: nil)
                    detector.endRun()
                    lastDenseThumbnail = nil
                    anchors = (k + 1)..<resume
                    densePushFrom = pushStart(after: packets.prefix(resume))
                    if Self.debug {
                        FileHandle.standardError.write(
                            Data(String(format: "run resumes over the anchors before the spike at %.3f\n", spikeTime).utf8))
                    }
                }
                continue
            }
            // What the decoder still holds is not followed by the frames skipped: dropped.
            closeRun()
            return .stopped
        }
        return .whole
    }

    /// The first frame shown after every picture of `skippable` (packets whose non-reference
    /// pictures may be skipped): pictures are shown in order, and each packet after them is
    /// decoded whole.
    func pushStart(after skippable: ArraySlice<Packet>) -> Double {
        skippable.compactMap { $0.pts.map(stream.seconds) }.max().map { $0 + 0.5 * nominalInterval } ?? -.infinity
    }

    /// Two pictures between which none of the GOP triggers would fire: colours, their layout and
    /// the structure all close.
    func looksAlike(_ a: Thumbnail, _ b: Thumbnail) -> Bool {
        a.histogramDistance(to: b, aligningBrightness: true) < settings.keyframeDistanceFloor
            && SceneDetector.layoutDistance(a.signature, b.signature) < 8
            && SceneDetector.difference(a, b) < 25
    }

    /// Starts a run at GOP `index` unless one goes on into it. `baseline`: the footage's motion
    /// there, for judgements where the run's own frames barely move (the last keyframe's if nil).
    func ensureDenseContinuity(for index: Int, baseline: Double? = nil) throws {
        if let through = denseActiveThrough, through == index - 1 || through == index {
            // A run going on into this GOP: the motion here, as its keyframe's sample run measured
            // it (the run may have begun in another shot, before a cut).
            if through == index - 1, let baseline { detector.baselineHint = baseline }
            return
        }
        try endDense(finalThumbnail: nil)
        dense?.flush()
        detector.beginRun(baseline: baseline ?? samples.last(where: { $0.activity != nil })?.activity ?? 0)
    }

    func decodeDense(_ packet: Packet) throws {
        let decoder = try dense ?? Decoder(stream: stream, options: denseOptions)
        dense = decoder
        decoder.exportsMotionVectors = denseMotion
        try decoder.decode(packet, into: frame) { try collectDenseFrame($0) }
    }

    /// Lean: drains the dense decoder's last pictures into the detector (whose run goes on) and
    /// frees the decoder with its pictures before the next sample run opens one. The next dense
    /// GOP starts afresh on its keyframe, so the leading pictures of `next` (an open GOP's, shown
    /// before its keyframe and referring to this GOP) are decoded first, with that keyframe.
    func releaseLeanDecoder(before next: GOP? = nil) throws {
        guard lean, let decoder = dense else { return }
        if let next { for packet in leadingRun(of: next) { try decodeDense(packet) } }
        try decoder.decode(nil, into: frame) { try collectDenseFrame($0) }
        dense = nil
    }

    /// An open GOP's keyframe and its leading pictures (shown before the keyframe, decoded after it,
    /// referring to the GOP before): the frames that end the GOP before's run. Empty for a closed GOP.
    func leadingRun(of gop: GOP) -> [Packet] {
        let leading = gop.packets.dropFirst().prefix { packet in packet.pts.map(stream.seconds).map { $0 < gop.keyTime } ?? false }
        return leading.isEmpty ? [] : [gop.packets[0]] + leading
    }

    func collectDenseFrame(_ frame: Frame) throws {
        try tick()
        decodedFrames += 1
        guard let ticks = frame.timestamp else { return }
        let t = stream.seconds(ticks)
        if t < densePushFrom, var resumed = resumedRun {
            let thumb = try thumbnailer.thumbnail(of: frame)
            if let last = resumed.lastAnchor {
                resumed.activities.append(last.thumb.activity(to: thumb, seconds: t - last.time, frameInterval: nominalInterval))
            }
            resumed.lastAnchor = (t, thumb)
            resumedRun = resumed
        }
        // A lean run that went on past an open GOP's leading pictures has shown its keyframe already.
        guard t >= densePushFrom, !runHasShown(t) else { return }
        if let resumed = resumedRun {
            detector.beginRun(baseline: resumed.activities.isEmpty ? resumed.fallback : SceneDetector.median(resumed.activities))
            resumedRun = nil
        }
        let thumb = try thumbnailer.thumbnail(of: frame)
        detector.push(time: t, thumbnail: thumb)
        if denseContinuous && t - lastDenseSampleTime >= 0.5 {
            // Long GOPs have no sample runs: sample the dense stream instead.
            let activity = lastDenseThumbnail.map { $0.thumb.activity(to: thumb, seconds: t - $0.time, frameInterval: nominalInterval) }
            let motion = frame.pictureType == .predicted ? MotionEstimate(frame: frame, width: width, interval: nominalInterval) : nil
            // Faces every other second, as sample runs look for them, beside the scan: the sample
            // gets them when the scan finishes.
            if let denseFaces, t - lastFaceTime >= Self.faceInterval {
                lastFaceTime = t
                let picture = try frame.clone(), index = samples.count, facesFound = facesFound
                facesFound.expect()
                denseFaces.search(picture) { facesFound.record($0, at: index) }
            }
            samples.append(
                VideoSample(
                    time: t, thumbnail: thumb, sharpness: try thumbnailer.sharpness(of: frame),
                    brightness: thumb.meanLuma, activity: activity, motion: motion
                ).features)
            lastDenseSampleTime = t
        }
        lastDenseThumbnail = (t, thumb)
    }

    /// Completes the dense run that went to the end of the GOP before `gop`, before `gop` is
    /// judged: an open GOP's leading pictures are that run's last frames (shown before its
    /// keyframe, decoded after it, referring to the GOP before), so they are decoded, with the
    /// keyframe, into the run. A change among them is then placed on its frame, not on the
    /// keyframe, and a gradual change going on across them is seen to go on. (A lean scanner's
    /// decoder is gone by then: it decoded them before letting go, `releaseLeanDecoder(before:)`.)
    /// Returns the packets of `gop` the dense decoder has taken.
    func decodeLeadingPictures(of gop: GOP) throws -> Int {
        guard denseActiveThrough == gop.index - 1, dense != nil else { return 0 }
        let run = leadingRun(of: gop)
        for packet in run { try decodeDense(packet) }
        return run.count
    }

    /// Drains the dense decoder and closes the detector's run, adding the next keyframe as its last
    /// frame (unless the run already showed it).
    func endDense(finalThumbnail: (Double, Thumbnail)?) throws {
        guard denseActiveThrough != nil else { return }
        try dense?.decode(nil, into: frame) { try collectDenseFrame($0) }
        if let (t, thumb) = finalThumbnail, !runHasShown(t) { detector.push(time: t, thumbnail: thumb) }
        closeRun()
    }

    /// Whether the detector's run already holds the frame shown at `t` (or a later one).
    func runHasShown(_ t: Double) -> Bool { t <= lastDenseThumbnail?.time ?? -.infinity }

    /// Ends the detector's run and forgets the dense decoder's state.
    func closeRun() {
        detector.endRun()
        dense?.flush()
        if lean { dense = nil }
        denseActiveThrough = nil
        lastDenseThumbnail = nil
    }
}
