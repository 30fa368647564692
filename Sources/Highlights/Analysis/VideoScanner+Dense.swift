import Foundation
import Media

/// Decoding every frame of the GOPs where a change may be, and handing the runs to the detector.
extension VideoScanner {
    // MARK: Dense decoding

    enum DenseEnding { case whole, stopped, beganMidChange }

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
    func decodeDense(_ packets: ArraySlice<Packet>, towards next: VideoSample?, after spikeTime: Double,
                     anchorsUntil: Int, settledAtStart: Bool, checkingStart: Bool) throws -> DenseEnding {
        // The frames over which the run's start is judged next, while it is.
        var startCheck: Int? = checkingStart ? SceneDetector.startFrames : nil
        let changesBefore = detector.changeCount
        if anchorsUntil > 0 {
            // Every frame shown after the last skippable one is decoded: pictures are shown in
            // order, and each packet from `anchorsUntil` on is decoded whole.
            densePushFrom = packets.prefix(anchorsUntil).compactMap { $0.pts.map(stream.seconds) }.max().map { $0 + 0.5 * nominalInterval }
                ?? -.infinity
        }
        defer {
            densePushFrom = -.infinity
            dense?.skipsNonReferencePictures = false
        }
        for (k, packet) in packets.enumerated() {
            if let dense { dense.skipsNonReferencePictures = k > 0 && k < anchorsUntil }
            try decodeDense(packet)
            if let frames = startCheck, detector.runLength > frames + 2 {
                if detector.runBeganMidChange(over: frames) { return .beganMidChange }
                startCheck = frames == SceneDetector.startFrames && detector.startBlendsSlowly ? SceneDetector.slowStartFrames : nil
            }
            guard startCheck == nil, k < packets.count - 1, settledAtStart || detector.changeCount > changesBefore, let next,
                  let last = lastDenseThumbnail, last.time > spikeTime, detector.isSettled,
                  looksAlike(last.thumb, next.thumbnail) else { continue }
            // What the decoder still holds is not followed by the frames skipped: dropped.
            closeRun()
            return .stopped
        }
        return .whole
    }

    /// Two pictures between which none of the GOP triggers would fire: colours, their layout and
    /// the structure all close.
    func looksAlike(_ a: Thumbnail, _ b: Thumbnail) -> Bool {
        a.histogramDistance(to: b, aligningBrightness: true) < settings.keyframeDistanceFloor
            && SceneDetector.layoutDistance(a.signature, b.signature) < 8
            && SceneDetector.difference(a, b) < 25
    }

    func ensureDenseContinuity(for index: Int) throws {
        if let through = denseActiveThrough, through == index - 1 || through == index { return }
        try endDense(finalThumbnail: nil)
        dense?.flush()
        let nearby = samples.last(where: { $0.activity != nil })?.activity ?? 0
        detector.beginRun(baseline: nearby)
    }

    func decodeDense(_ packet: Packet) throws {
        let decoder = try dense ?? Decoder(stream: stream, options: denseOptions)
        dense = decoder
        decoder.exportsMotionVectors = denseMotion
        try decoder.decode(packet, into: frame) { try collectDenseFrame($0) }
    }

    /// Lean: drains the dense decoder's last pictures into the detector (whose run goes on) and
    /// frees the decoder with its pictures before the next sample run opens one. The next dense
    /// GOP starts afresh on its keyframe (an open GOP's leading pictures are then skipped).
    func releaseLeanDecoder() throws {
        guard lean, let decoder = dense else { return }
        try decoder.decode(nil, into: frame) { try collectDenseFrame($0) }
        dense = nil
    }

    func collectDenseFrame(_ frame: Frame) throws {
        try tick()
        decodedFrames += 1
        guard let ticks = frame.timestamp else { return }
        let t = stream.seconds(ticks)
        guard t >= densePushFrom else { return }
        let thumb = try thumbnailer.thumbnail(of: frame)
        detector.push(time: t, thumbnail: thumb)
        if denseContinuous && t - lastDenseSampleTime >= 0.5 {
            // Long GOPs have no sample runs: sample the dense stream instead.
            let activity = lastDenseThumbnail.map { thumb.difference(to: $0.thumb) / max(1, (t - $0.time) / nominalInterval) }
            let motion = frame.pictureType == .predicted ? MotionEstimate(frame: frame, width: width, interval: nominalInterval) : nil
            samples.append(VideoSample(time: t, thumbnail: thumb, sharpness: try thumbnailer.sharpness(of: frame),
                                       brightness: thumb.meanLuma, activity: activity, motion: motion).features)
            lastDenseSampleTime = t
        }
        lastDenseThumbnail = (t, thumb)
    }

    /// Drains the dense decoder and closes the detector's run, adding the next keyframe as its last frame.
    func endDense(finalThumbnail: (Double, Thumbnail)?) throws {
        guard denseActiveThrough != nil else { return }
        try dense?.decode(nil, into: frame) { try collectDenseFrame($0) }
        if let (t, thumb) = finalThumbnail { detector.push(time: t, thumbnail: thumb) }
        closeRun()
    }

    /// Ends the detector's run and forgets the dense decoder's state.
    func closeRun() {
        detector.endRun()
        dense?.flush()
        if lean { dense = nil }
        denseActiveThrough = nil
        lastDenseThumbnail = nil
    }
}
