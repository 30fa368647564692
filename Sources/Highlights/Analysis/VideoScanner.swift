import CFFmpeg
import Foundation
import Media

/// The video half of the analysis pass. Sees every packet once, in file order, but decodes sparsely:
///
/// * every keyframe and the packet after it ("sample runs", on two runner threads): picture,
///   sharpness, the change to the next frame, motion vectors;
/// * the packet sizes of every frame (compressed-domain activity, and cut hints);
/// * whole GOPs only where a scene change is suspected (keyframes whose colours differ, a packet
///   near keyframe size, a keyframe the encoder started early), to place the change on its exact
///   frame and tell a dissolve, a fade or a flash from a cut.
///
/// Memory holds the compressed packets of the last two or three GOPs, never the whole video.
final class VideoScanner {
    struct Settings {
        /// Packets decoded after each keyframe: the first one is the first predicted picture, whose
        /// motion vectors all point at the keyframe.
        var sampleRunPackets = 1
        /// GOPs longer than this, or holding more compressed bytes, are decoded in full as they come
        /// (too few keyframes to sample, too much to buffer). Camera GOPs are 0.5–10 s.
        var longGOP = 12.0
        var longGOPBytes = 48 << 20
        /// A GOP whose keyframes' colours differ by more than this is always checked frame by frame…
        var keyframeDistanceAlways = 0.3
        /// …and one whose differ by more than the floor and the ratio times the recent typical distance.
        var keyframeDistanceFloor = 0.12
        var keyframeDistanceRatio = 2.5
        var packetSpikeRatio = 2.5
        /// …and this times the median spike ratio of recent GOPs.
        var spikeRecurrenceRatio = 1.5
        /// Packets decoded whole before a spike reached over the anchors: the detector's cut window
        /// and a few for reordering.
        var spikeLookBackPackets = 14
        /// GOPs sampled ahead of the one being decided, and the compressed bytes they may hold.
        var pipelineDepth = 8
        var pipelineBytes = 64 << 20
    }

    private struct GOP {
        var index: Int
        var packets: [Packet] = []
        var keyTime: Double
        var job: SampleJob
        var sample: VideoSample? = nil
        /// Seconds to the next keyframe, once it has arrived.
        var interval: Double? = nil
        var denseDecoded = false
        var bytes = 0
    }

    let stream: MediaStream
    private let settings: Settings
    private let runners: [SampleRunner]
    /// Opened at the start (an undecodable stream fails there); a lean scanner (pictures beyond 4K)
    /// frees it once each GOP is decoded and opens another when the next GOP needs one.
    private var dense: Decoder?
    private let denseOptions: Decoder.Options
    private let lean: Bool
    private let thumbnailer: Thumbnailer
    private let detector: SceneDetector
    private let frame = Frame()
    private let width: Int
    private let nominalInterval: Double

    private var current: GOP?
    private var lastSampled: GOP?
    /// Closed GOPs waiting for the next one's sample before their fate is decided.
    private var awaiting: [GOP] = []
    private var gopCount = 0
    private var denseActiveThrough: Int?
    private var denseContinuous = false
    /// The dense decoder exports motion vectors only while it stands in for the sample runs (long GOPs).
    private var denseMotion = false
    private var lastDenseSampleTime = -Double.infinity
    private var lastDenseThumbnail: (time: Double, thumb: Thumbnail)?
    /// Frames shown before this time are anchors of a quick pass, not part of the detector's run.
    private var densePushFrom = -Double.infinity
    private var recentKeyDistances = RecentValues()
    private var recentKeyIntervals = RecentValues()
    private var recentActivities = RecentValues()
    private var recentPictureDifferences = RecentValues()
    private var recentLayoutDistances = RecentValues()
    private var recentStructureDistances = RecentValues()
    private var recentSpikeRatios = RecentValues()
    private var lastTime: Double?

    private(set) var samples: [SampleFeatures] = []
    private(set) var frameTimes: [Double] = []
    /// Compressed bytes per whole second of video.
    private(set) var bytesPerSecond: [Int] = []
    private(set) var decodedFrames = 0
    /// Every packet's timestamps, size and picture kind, for the copy path.
    private(set) var packets: PacketIndex

    var sceneChanges: [SceneChange] { detector.changes }

    /// Called for every densely decoded frame, so progress and cancellation are seen mid-GOP.
    var tick: () throws -> Void = {}

    /// `MOMENTS_DEBUG_SCAN=1` prints each GOP's decision to standard error.
    static let debug = ProcessInfo.processInfo.environment["MOMENTS_DEBUG_SCAN"] == "1"

    /// `lean`: pictures beyond 4K (see `MediaLimits.leanDecodingBytes`).
    init(stream: MediaStream, info: MediaInfo, lean: Bool = false, settings: Settings = Settings()) throws {
        self.stream = stream
        self.settings = settings
        packets = PacketIndex(stream: stream)
        let nominalInterval = info.nominalFrameInterval
        self.nominalInterval = nominalInterval
        detector = SceneDetector(frameInterval: nominalInterval)
        // Larger pictures than 8-bit 1080p (10-bit HDR, 4K, 8K): one runner decoding on two slice
        // threads instead of two runners, one decoder's pictures fewer (measured: as fast on
        // 10-bit HEVC with wavefront rows, 40 MB less).
        let runnerCount = info.pictureBytes > MediaLimits.frameThreadingBytes ? 1 : 2
        runners = try (0..<runnerCount).map {
            try SampleRunner(stream: stream, info: info, nominalInterval: nominalInterval, sliceThreads: 3 - runnerCount, lean: lean,
                             label: "moments.sample-runner.\($0)")
        }
        denseOptions = .video(for: info, threads: 2, analysis: true)
        dense = try Decoder(stream: stream, options: denseOptions)
        self.lean = lean
        thumbnailer = try Thumbnailer(width: info.width, height: info.height, sampleAspectRatio: info.sampleAspectRatio)
        width = info.width
    }

    deinit {
        // Runners may still hold jobs; let them finish before their decoders go.
        for gop in awaiting + (current.map { [$0] } ?? []) where gop.job.submitted { _ = gop.job.wait() }
    }

    /// The packet's presentation time, repaired when the container has none.
    private func time(of packet: Packet) -> Double {
        let t = packet.pts.map(stream.seconds) ?? packet.dts.map(stream.seconds) ?? ((lastTime ?? -nominalInterval) + nominalInterval)
        lastTime = t
        return t
    }

    func feed(_ packet: Packet) throws {
        let t = time(of: packet)
        frameTimes.append(t)
        packets.add(packet)
        let second = max(0, Int(t))
        if second < 100_000 {
            if bytesPerSecond.count <= second { bytesPerSecond.append(contentsOf: repeatElement(0, count: second - bytesPerSecond.count + 1)) }
            bytesPerSecond[second] += packet.size
        }
        if packet.isKeyframe || current == nil {
            try startGOP(with: packet, at: t)
            return
        }
        if denseContinuous {
            try decodeDense(packet)
            return
        }
        current!.packets.append(packet.reference())
        current!.bytes += packet.size
        if !current!.job.submitted {
            current!.job.add(packet)
            if current!.job.packets.count > settings.sampleRunPackets { current!.job.submit(to: runner(for: current!.index)) }
        }
        if t - current!.keyTime > settings.longGOP || current!.bytes > settings.longGOPBytes {
            // No keyframe in sight: settle the earlier GOPs, then decode this one in full from here on.
            current!.job.submit(to: runner(for: current!.index))
            current!.sample = take(current!.job)
            try settleAwaiting(before: current!.sample)
            try ensureDenseContinuity(for: current!.index)
            denseMotion = true
            for buffered in current!.packets { try decodeDense(buffered) }
            current!.packets.removeAll()
            current!.denseDecoded = true
            denseContinuous = true
            denseActiveThrough = current!.index
        }
    }

    /// The file ended in damage: what was indexed cannot be trusted for copying.
    func markDamaged() { packets.markIncomplete() }

    func finish() throws {
        if var last = current {
            last.job.submit(to: runner(for: last.index))
            if last.sample == nil { last.sample = take(last.job) }
            try settleAwaiting(before: last.sample)
            try finalize(last, next: nil)
        }
        current = nil
        try endDense(finalThumbnail: nil)
        frameTimes.sort()
        samples.sort { $0.time < $1.time }
    }

    // MARK: GOPs

    private func runner(for index: Int) -> SampleRunner { runners[index % runners.count] }

    /// Waits for a sample run and counts its work.
    private func take(_ job: SampleJob) -> VideoSample? {
        let outcome = job.wait()
        decodedFrames += outcome.decodedFrames
        return outcome.sample
    }

    private func startGOP(with packet: Packet, at t: Double) throws {
        if denseContinuous { try releaseLeanDecoder() }
        if var previous = current {
            previous.job.submit(to: runner(for: previous.index))
            previous.interval = t - previous.keyTime
            recentKeyIntervals.add(t - previous.keyTime)
            awaiting.append(previous)
        }
        denseContinuous = false
        denseMotion = false
        current = GOP(index: gopCount, packets: [packet.reference()], keyTime: t, job: SampleJob(key: packet), bytes: packet.size)
        gopCount += 1
        if settings.sampleRunPackets == 0 { current!.job.submit(to: runner(for: current!.index)) }
        // Decide a GOP once the one after it has been sampled, keeping a few GOPs in flight so both
        // runners always have a keyframe to decode while this thread demuxes and decodes densely.
        while awaiting.count > settings.pipelineDepth
                || (awaiting.count >= 2 && awaiting.reduce(0, { $0 + $1.bytes }) > settings.pipelineBytes) {
            let gop = awaiting.removeFirst()
            try finalize(gop, next: sampledAwaiting(0), afterNext: sampledAwaiting(1))
        }
    }

    /// Decides every waiting GOP; the last of them is followed by a GOP sampled as `next`.
    private func settleAwaiting(before next: VideoSample?) throws {
        while !awaiting.isEmpty {
            let gop = awaiting.removeFirst()
            // The keyframes that follow it: the waiting GOPs' first, then `next`.
            let following = (0..<min(2, awaiting.count)).map(sampledAwaiting) + [next]
            try finalize(gop, next: following[0], afterNext: following.count > 1 ? following[1] : nil)
        }
    }

    /// The sample of the `index`th waiting GOP (all of them are closed, so their runs are submitted).
    private func sampledAwaiting(_ index: Int) -> VideoSample? {
        guard index < awaiting.count else { return nil }
        if awaiting[index].sample == nil { awaiting[index].sample = take(awaiting[index].job) }
        return awaiting[index].sample
    }

    /// Decides whether GOP `gop` may hold a scene change and, if so, decodes it frame by frame.
    /// `next` is the sample of the keyframe that ends it (nil at the end of the video), `afterNext`
    /// the one after that when it has been sampled.
    private func finalize(_ gop: GOP, next: VideoSample?, afterNext: VideoSample? = nil) throws {
        var gop = gop
        if gop.sample == nil { gop.sample = take(gop.job) }
        if let sample = gop.sample {
            samples.append(sample.features)
            if let activity = sample.activity { recentActivities.add(activity) }
        }
        if gop.denseDecoded { return }
        var distance = 0.0, typicalDistance = 0.0
        if let a = gop.sample?.thumbnail, let b = next?.thumbnail {
            distance = a.histogramDistance(to: b, aligningBrightness: true)
            // The quieter end of recent distances: in fast-cut footage most GOPs hold a cut, so the
            // median would be a cut's distance, not a steady shot's.
            typicalDistance = recentKeyDistances.quantile(0.25)
            recentKeyDistances.add(distance)
        }
        let colourJump = distance >= settings.keyframeDistanceAlways
            || (distance >= settings.keyframeDistanceFloor && distance >= settings.keyframeDistanceRatio * typicalDistance)
        // A cut inside a GOP is coded as a (nearly) intra picture: a packet several times the GOP's
        // other large packets (its P pictures: the 90th percentile, above every B picture).
        // Some sources spike in every GOP (a camera's own intra refresh, a transcoded file's old
        // keyframes): a spike counts only where it stands out from the recent GOPs' spikes too.
        var spike = false
        var spikeIndex = 0
        var spikeRatio = 0.0
        if gop.packets.count > 4 {
            spikeIndex = gop.packets.indices.dropFirst().max { gop.packets[$0].size < gop.packets[$1].size }!
            let largest = gop.packets[spikeIndex].size
            let others = gop.packets.indices.dropFirst().filter { $0 != spikeIndex }.map { gop.packets[$0].size }.sorted()
            let upper = others[min(others.count - 1, others.count * 9 / 10)]
            spikeRatio = Double(largest) / Double(max(upper, 1))
            spike = spikeRatio >= settings.packetSpikeRatio && largest * 6 >= gop.packets[0].size
                && spikeRatio >= settings.spikeRecurrenceRatio * recentSpikeRatios.quantile(0.5)
            recentSpikeRatios.add(spikeRatio)
        }
        // Encoders with scene-cut detection start a new GOP early, on the cut's first frame.
        let regular = recentKeyIntervals.count >= 3 ? recentKeyIntervals.quantile(1) : nil
        let early = gop.interval.map { interval in regular.map { interval < 0.9 * $0 && interval < $0 - 3 * nominalInterval } ?? false } ?? false
        var pictureJump = false
        if let a = gop.sample?.thumbnail, let b = next?.thumbnail {
            let difference = a.difference(to: b)
            pictureJump = difference >= 20 && difference >= 2 * recentPictureDifferences.quantile(0.25)
            recentPictureDifferences.add(difference)
        }
        // Two shots of similar colours can share a histogram: the colour layout (where the colours
        // are) still moves far more across a cut than the quieter GOPs around it.
        var layoutJump = false
        if let a = gop.sample?.thumbnail, let b = next?.thumbnail {
            let layout = SceneDetector.layoutDistance(a.signature, b.signature)
            // A pan, a walk or things moving through the picture change it GOP after GOP: a cut's
            // jump also stands out from the GOP before it or the one after it.
            let c = afterNext?.thumbnail
            let layoutAround = min(recentLayoutDistances.values.last ?? 0, c.map { SceneDetector.layoutDistance(b.signature, $0.signature) } ?? 0)
            layoutJump = layout >= 8 && layout >= 3 * max(recentLayoutDistances.quantile(0.25), layoutAround)
            recentLayoutDistances.add(layout)
            // A jump cut keeps the colours and their layout: the structure still jumps.
            let structure = SceneDetector.difference(a, b)
            let structureAround = min(recentStructureDistances.values.last ?? 0, c.map { SceneDetector.difference(b, $0) } ?? 0)
            // Only between still pictures: a pan or a walk changes the structure over a GOP too.
            let still = (gop.sample?.activity ?? .infinity) <= 3 && (next?.activity ?? .infinity) <= 3
            layoutJump = layoutJump || (still && structure >= 25
                                        && structure >= 3 * max(recentStructureDistances.quantile(0.25), structureAround))
            recentStructureDistances.add(structure)
        }
        let calmAfter = (next?.activity ?? .infinity) <= max(3, 2 * recentActivities.quantile(0.5))
        // After an early keyframe any real change of picture means a cut there; none means the
        // encoder restarted for another reason (a flash, a burst of motion).
        let changedAtEarlyKey = early && (distance >= settings.keyframeDistanceFloor || pictureJump)
        // A gradual change still going on where the last dense GOP ended continues into this one.
        let continuing = denseActiveThrough == gop.index - 1 && detector.isFollowingChange
        // Only new colours make the encoder's keyframe a cut to trust without looking: a changed
        // structure alone may be the end of a whip pan or a zoom.
        let trustedEarlyKey = changedAtEarlyKey && distance >= settings.keyframeDistanceFloor
        let decision: String
        let decodedBefore = decodedFrames
        if spike || ((colourJump || layoutJump) && !early) || (changedAtEarlyKey && (!calmAfter || !trustedEarlyKey)) || continuing {
            // A cut somewhere inside, or a gradual change: find it frame by frame.
            let startsRun = denseActiveThrough == nil || denseActiveThrough! < gop.index - 1
            try ensureDenseContinuity(for: gop.index)
            // The GOP before, kept in case a dissolve or fade was already under way at this keyframe.
            let before = startsRun ? lastSampled.flatMap { $0.index == gop.index - 1 ? $0 : nil } : nil
            // The change a spike points at is placed once its frame has been shown and judged.
            let spikeTime = spike ? gop.packets[spikeIndex].pts.map(stream.seconds) ?? .infinity : -Double.infinity
            // Keyframes alike at both ends: the spike is the only thing to look at (a short insert,
            // a flash, or nothing). The anchors before it are decoded, the run starts a cut window
            // before it, and it ends as soon as the spike has been judged.
            let endsAlike = gop.sample.flatMap { a in next.map { looksAlike(a.thumbnail, $0.thumbnail) } } ?? false
            let anchorsUntil = spike && endsAlike && startsRun ? max(0, spikeIndex - settings.spikeLookBackPackets) : 0
            var ending = try decodeDense(gop.packets[...], towards: next, after: spikeTime, anchorsUntil: anchorsUntil,
                                         settledAtStart: endsAlike, checkingStart: before != nil && anchorsUntil == 0)
            if ending == .beganMidChange, let before {
                // Decode the GOP before it too, and this one again after it, so the change is measured whole.
                detector.discardRun()
                dense?.flush()
                ending = try decodeDense((before.packets + gop.packets)[...], towards: next, after: spikeTime, anchorsUntil: 0,
                                         settledAtStart: false, checkingStart: false)
            }
            decision = ending == .stopped ? "decoded until the change was placed" : "decode in full"
            lastSampled = nil
            if ending != .stopped {
                denseActiveThrough = gop.index
                try releaseLeanDecoder()
            }
        } else if trustedEarlyKey, let next {
            // The encoder already found the cut's exact frame: the keyframe that ends this GOP.
            decision = "cut on the next keyframe"
            lastSampled = nil
            if denseActiveThrough != nil { try endDense(finalThumbnail: gop.sample.map { ($0.time, $0.thumbnail) }) }
            detector.addKeyframeCut(time: next.time, strength: gop.sample.map { $0.thumbnail.difference(to: next.thumbnail) } ?? 0)
        } else {
            decision = "sampled"
            if denseActiveThrough != nil { try endDense(finalThumbnail: gop.sample.map { ($0.time, $0.thumbnail) }) }
            // Kept at hand (its packets only) in case the next GOP finds a change already under
            // way at its keyframe.
            lastSampled = gop
        }

        if Self.debug {
            FileHandle.standardError.write(Data(String(
                format: "gop %d at %.3f: %d packets, colour %.3f (typical %.3f), spike %@ (%.1f at %d), layout %@, early %@, continuing %@: %@ (%d decoded)\n",
                gop.index, gop.keyTime, gop.packets.count, distance, typicalDistance, spike ? "yes" : "no", spikeRatio, spikeIndex,
                layoutJump ? "yes" : "no", early ? "yes" : "no", continuing ? "yes" : "no", decision, decodedFrames - decodedBefore).utf8))
        }
    }

    // MARK: Dense decoding

    private enum DenseEnding { case whole, stopped, beganMidChange }

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
    /// dissolve or fade.
    private func decodeDense(_ packets: ArraySlice<Packet>, towards next: VideoSample?, after spikeTime: Double,
                             anchorsUntil: Int, settledAtStart: Bool, checkingStart: Bool) throws -> DenseEnding {
        var checkingStart = checkingStart
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
            if checkingStart && detector.runLength > 8 {
                checkingStart = false
                if detector.runBeganMidChange { return .beganMidChange }
            }
            guard !checkingStart, k < packets.count - 1, settledAtStart || detector.changeCount > changesBefore, let next,
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
    private func looksAlike(_ a: Thumbnail, _ b: Thumbnail) -> Bool {
        a.histogramDistance(to: b, aligningBrightness: true) < settings.keyframeDistanceFloor
            && SceneDetector.layoutDistance(a.signature, b.signature) < 8
            && SceneDetector.difference(a, b) < 25
    }

    private func ensureDenseContinuity(for index: Int) throws {
        if let through = denseActiveThrough, through == index - 1 || through == index { return }
        try endDense(finalThumbnail: nil)
        dense?.flush()
        let nearby = samples.last(where: { $0.activity != nil })?.activity ?? 0
        detector.beginRun(baseline: nearby)
    }

    private func decodeDense(_ packet: Packet) throws {
        let decoder = try dense ?? Decoder(stream: stream, options: denseOptions)
        dense = decoder
        decoder.exportsMotionVectors = denseMotion
        try decoder.decode(packet, into: frame) { try collectDenseFrame($0) }
    }

    /// Lean: drains the dense decoder's last pictures into the detector (whose run goes on) and
    /// frees the decoder with its pictures before the next sample run opens one. The next dense
    /// GOP starts afresh on its keyframe (an open GOP's leading pictures are then skipped).
    private func releaseLeanDecoder() throws {
        guard lean, let decoder = dense else { return }
        try decoder.decode(nil, into: frame) { try collectDenseFrame($0) }
        dense = nil
    }

    private func collectDenseFrame(_ frame: Frame) throws {
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
            let motion = frame.pictureType == AV_PICTURE_TYPE_P ? MotionEstimate(frame: frame, width: width, interval: nominalInterval) : nil
            samples.append(VideoSample(time: t, thumbnail: thumb, sharpness: try thumbnailer.sharpness(of: frame),
                                       brightness: thumb.meanLuma, activity: activity, motion: motion).features)
            lastDenseSampleTime = t
        }
        lastDenseThumbnail = (t, thumb)
    }

    /// Drains the dense decoder and closes the detector's run, adding the next keyframe as its last frame.
    private func endDense(finalThumbnail: (Double, Thumbnail)?) throws {
        guard denseActiveThrough != nil else { return }
        try dense?.decode(nil, into: frame) { try collectDenseFrame($0) }
        if let (t, thumb) = finalThumbnail { detector.push(time: t, thumbnail: thumb) }
        closeRun()
    }

    /// Ends the detector's run and forgets the dense decoder's state.
    private func closeRun() {
        detector.endRun()
        dense?.flush()
        if lean { dense = nil }
        denseActiveThrough = nil
        lastDenseThumbnail = nil
    }
}
