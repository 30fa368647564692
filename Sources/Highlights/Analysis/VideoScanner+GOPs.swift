import Foundation
import Media

/// Each GOP's sample and its verdict: skip it, or decode it in full where a change may be.
extension VideoScanner {
    // MARK: GOPs

    func runner(for index: Int) -> SampleRunner { runners[index % runners.count] }

    /// Waits for a sample run and counts its work.
    func take(_ job: SampleJob) -> VideoSample? {
        let outcome = job.wait()
        decodedFrames += outcome.decodedFrames
        return outcome.sample
    }

    func startGOP(with packet: Packet, at t: Double) throws {
        if denseContinuous { try releaseLeanDecoder() }
        if var previous = current {
            previous.job.submit(to: runner(for: previous.index))
            previous.interval = t - previous.keyTime
            recentKeyIntervals.add(t - previous.keyTime)
            awaiting.append(previous)
        }
        denseContinuous = false
        denseMotion = false
        // Faces are looked for every other second or so: in a keyframe at least `faceInterval`
        // after the last picture searched.
        let findsFaces = t - lastFaceTime >= Self.faceInterval
        if findsFaces { lastFaceTime = t }
        current = GOP(
            index: gopCount, packets: [packet.reference()], keyTime: t, job: SampleJob(key: packet, findsFaces: findsFaces),
            bytes: packet.size)
        gopCount += 1
        if settings.sampleRunPackets == 0 { current!.job.submit(to: runner(for: current!.index)) }
        // Decide a GOP once the one after it has been sampled, keeping a few GOPs in flight so both
        // runners always have a keyframe to decode while this thread demuxes and decodes densely.
        while awaiting.count > settings.pipelineDepth
            || (awaiting.count >= 2 && awaiting.reduce(0, { $0 + $1.bytes }) > settings.pipelineBytes)
        {
            let gop = awaiting.removeFirst()
            try finalize(gop, next: sampledAwaiting(0), afterNext: sampledAwaiting(1))
        }
    }

    /// Decides every waiting GOP; the last of them is followed by a GOP sampled as `next`.
    func settleAwaiting(before next: VideoSample?) throws {
        while !awaiting.isEmpty {
            let gop = awaiting.removeFirst()
            // The keyframes that follow it: the waiting GOPs' first, then `next`.
            let following = (0..<min(2, awaiting.count)).map(sampledAwaiting) + [next]
            try finalize(gop, next: following[0], afterNext: following.count > 1 ? following[1] : nil)
        }
    }

    /// The sample of the `index`th waiting GOP (all of them are closed, so their runs are submitted).
    func sampledAwaiting(_ index: Int) -> VideoSample? {
        guard index < awaiting.count else { return nil }
        if awaiting[index].sample == nil { awaiting[index].sample = take(awaiting[index].job) }
        return awaiting[index].sample
    }

    /// Whether a spike of `share` (its size against its keyframe's) in `gop` is much the size of one
    /// that came to nothing a GOP or two before: the source's own rhythm, which it then carries on.
    func repeatsIdleSpike(_ share: Double, in gop: GOP) -> Bool {
        guard let idle = idleSpike, gop.index - idle.index <= settings.spikeRhythmGOPs,
            max(share, idle.share) <= settings.spikeRhythmRatio * min(share, idle.share)
        else { return false }
        idleSpike = (gop.index, share)
        return true
    }

    /// A picture's size against the larger of `others` (their 90th percentile: in a GOP, its P
    /// pictures, above every B picture). `others` is not empty.
    static func spikeRatio(_ size: Int, against others: [Int]) -> Double {
        let sorted = others.sorted()
        return Double(size) / Double(max(sorted[min(sorted.count - 1, sorted.count * 9 / 10)], 1))
    }

    /// Whether a picture is large enough against its GOP's keyframe (a sixth of it) to be a cut's
    /// nearly intra-coded one.
    static func isNearKeyframeSize(_ size: Int, key: Int) -> Bool { size * 6 >= key }

    /// The pictures of a long GOP (over twice `localSpikeWindow`) that spike against the pictures
    /// within that window either side: in a GOP of several seconds a cut's picture stands out from
    /// the second around it, though a fade's or a busy stretch's large pictures elsewhere in the
    /// GOP may be larger. Indices in `gop.packets`, in decoding order.
    func localSpikes(in gop: GOP) -> [Int] {
        let reach = Int((settings.localSpikeWindow / nominalInterval).rounded())
        let sizes = gop.packets.map(\.size)
        guard reach > 0, sizes.count > 2 * reach + 1 else { return [] }
        let spikes = (1..<sizes.count).filter { i in
            Self.isNearKeyframeSize(sizes[i], key: sizes[0])
                && Self.spikeRatio(sizes[i], against: (max(1, i - reach)...min(sizes.count - 1, i + reach)).filter { $0 != i }.map { sizes[$0] })
                    >= settings.packetSpikeRatio
        }
        // Spikes of much the size within the window of each other are the source's rhythm (a slow
        // source's new pictures between repeated ones, a camera's refresh): none stands out.
        return spikes.filter { i in
            !spikes.contains { j in j != i && abs(j - i) <= reach && settings.spikeRecurrenceRatio * Double(sizes[j]) >= Double(sizes[i]) }
        }
    }

    /// The keyframe the encoder started early on a cut, taken as that cut without decoding around it.
    func addKeyframeCut(from gop: GOP, to next: VideoSample) {
        detector.addKeyframeCut(time: next.time, strength: gop.sample.map { $0.thumbnail.difference(to: next.thumbnail) } ?? 0)
    }

    /// Decides whether GOP `gop` may hold a scene change and, if so, decodes it frame by frame.
    /// `next` is the sample of the keyframe that ends it (nil at the end of the video), `afterNext`
    /// the one after that when it has been sampled. `isLast`: the video's last GOP.
    func finalize(_ gop: GOP, next: VideoSample?, afterNext: VideoSample? = nil, isLast: Bool = false) throws {
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
        let colourJump =
            distance >= settings.keyframeDistanceAlways
            || (distance >= settings.keyframeDistanceFloor && distance >= settings.keyframeDistanceRatio * typicalDistance)
        // A cut inside a GOP is coded as a (nearly) intra picture: a packet several times the GOP's
        // other large packets (its P pictures: the 90th percentile, above every B picture).
        // Some sources spike in every GOP (a camera's own intra refresh, a transcoded file's old
        // keyframes): a spike counts only where it stands out from the recent GOPs' spikes too.
        var spike = false
        var spikeIndex = 0
        var spikeRatio = 0.0
        var spikeShare = 0.0
        var rhythm = false
        if gop.packets.count > 4 {
            spikeIndex = gop.packets.indices.dropFirst().max { gop.packets[$0].size < gop.packets[$1].size }!
            let largest = gop.packets[spikeIndex].size
            spikeRatio = Self.spikeRatio(largest, against: gop.packets.indices.dropFirst().filter { $0 != spikeIndex }.map { gop.packets[$0].size })
            spikeShare = Double(largest) / Double(max(gop.packets[0].size, 1))
            let candidate = spikeRatio >= settings.packetSpikeRatio && Self.isNearKeyframeSize(largest, key: gop.packets[0].size)
            spike = candidate && spikeRatio >= settings.spikeRecurrenceRatio * recentSpikeRatios.quantile(0.5)
            recentSpikeRatios.add(spikeRatio)
            // A source's own refresh pictures (a transcoded file's old keyframes, a camera's intra
            // refresh) come every GOP or two at much the same size, and the first one decoded showed
            // nothing: this one is the same again. A cut's intra picture stands out from them.
            if candidate, repeatsIdleSpike(spikeShare, in: gop) {
                rhythm = true
                spike = false
            }
        }
        // An intra picture inside the GOP: the encoder's own scene-cut detection found a change of
        // picture too soon after the keyframe to start a GOP there. It counts as a spike whatever
        // its size against the GOP's other pictures (another shot's), unless one of much the same
        // size came to nothing a GOP or two before (an encoder that codes intra pictures in a rhythm).
        // (A run between alike keyframes starts a cut window before the first; none stops before the last.)
        if !spike, let intra = gop.intraPictures.first {
            let share = Double(gop.packets[intra].size) / Double(max(gop.packets[0].size, 1))
            if repeatsIdleSpike(share, in: gop) {
                rhythm = true
            } else {
                spike = true
                spikeIndex = intra
                spikeShare = share
            }
        }
        // Encoders with scene-cut detection start a new GOP early, on the cut's first frame: early
        // against the longest of the GOPs so far, or against the longest the encoder makes, where it
        // wrote it (in footage cut faster than that, every GOP so far may have ended on a cut).
        func endsBefore(_ regular: Double?) -> Bool {
            guard let interval = gop.interval, let regular else { return false }
            return interval < 0.9 * regular && interval < regular - 3 * nominalInterval
        }
        let earlyAmongSeen = endsBefore(recentKeyIntervals.count >= 3 ? recentKeyIntervals.quantile(1) : nil)
        let early = earlyAmongSeen || endsBefore(encoderKeyInterval)
        let pictureDifference = gop.sample.flatMap { a in next.map { a.thumbnail.difference(to: $0.thumbnail) } } ?? 0
        // Two shots of similar colours can share a histogram: the colour layout (where the colours
        // are) still moves far more across a cut than the quieter GOPs around it.
        var layoutJump = false
        var structure = 0.0, structureAround = 0.0
        if let a = gop.sample?.thumbnail, let b = next?.thumbnail {
            let layout = SceneDetector.layoutDistance(a.signature, b.signature)
            // A pan, a walk or things moving through the picture change it GOP after GOP: a cut's
            // jump also stands out from the GOP before it or the one after it.
            let c = afterNext?.thumbnail
            let layoutAround = min(recentLayoutDistances.values.last ?? 0, c.map { SceneDetector.layoutDistance(b.signature, $0.signature) } ?? 0)
            layoutJump = layout >= 8 && layout >= 3 * max(recentLayoutDistances.quantile(0.25), layoutAround)
            recentLayoutDistances.add(layout)
            // A jump cut keeps the colours and their layout: the structure still jumps.
            structure = SceneDetector.difference(a, b)
            structureAround = min(recentStructureDistances.values.last ?? 0, c.map { SceneDetector.difference(b, $0) } ?? 0)
            // Only between still pictures: a pan or a walk changes the structure over a GOP too.
            let still = (gop.sample?.activity ?? .infinity) <= 3 && (next?.activity ?? .infinity) <= 3
            layoutJump =
                layoutJump
                || (still && structure >= 25
                    && structure >= 3 * max(recentStructureDistances.quantile(0.25), structureAround))
            recentStructureDistances.add(structure)
        }
        let calm = max(3, 2 * recentActivities.quantile(0.5))
        let calmAfter = (next?.activity ?? .infinity) <= calm
        // The keyframe's sample run moved far more than the keyframes either side of it: something
        // happened between the keyframe and the first picture after it (a jump cut keeps the
        // colours and their layout), or a burst of motion began there. Only the frames up to that
        // picture are decoded to tell which. (The keyframe before counts only when its GOP was left
        // as sampled, since one suspected of a change may end in another shot; the one after next
        // stands in.)
        let activity = gop.sample?.activity ?? 0
        let previousSampled = gop.index == 0 || lastSampled?.index == gop.index - 1
        let activityBefore = previousSampled ? recentActivities.values.dropLast().last ?? .infinity : afterNext?.activity ?? .infinity
        let activityJump =
            activity >= settings.activityJumpFloor
            && activity >= settings.activityJumpRatio * max(activityBefore, next?.activity ?? .infinity)
        // After an early keyframe any real change of picture means a cut there; none means the
        // encoder restarted for another reason (a flash, a burst of motion).
        let changedAtEarlyKey = early && (distance >= settings.keyframeDistanceFloor || pictureDifference >= 20)
        // The last dense run's own last frames, if this GOP is open, before anything is judged on it.
        let taken = try decodeLeadingPictures(of: gop)
        // A gradual change still going on where the last dense GOP ended continues into this one.
        // A step onto this keyframe that stands out as a cut's would from the run's last frames,
        // where the keyframe moves: it may be the first of a zoom or a whip pan begun there, told
        // from a cut only by the frames after it.
        let afterDense = denseActiveThrough == gop.index - 1
        // A burst goes on at much the pace of its first step (the steps after it a third of it and
        // more); after a cut the new shot moves at its own pace, however large the cut's step.
        let burstMayBegin =
            afterDense && activity > calm
            && gop.sample.map { sample in
                let step = detector.step(to: sample)
                return detector.standsOutAtEnd(step) && activity >= settings.burstPace * step
            } ?? false
        var continuing = afterDense && (detector.isFollowingChange || burstMayBegin)
        // A drift that goes on longer than any dissolve, with none found in it, is the shot's own
        // motion (a slow pan over smooth ground blends like a dissolve over a few frames): it is
        // not followed into GOP after GOP.
        followingSince = continuing ? followingSince ?? gop.keyTime : nil
        if continuing, let since = followingSince, gop.keyTime - since > settings.longestDrift, !detector.isHoldingChange {
            continuing = false
        }
        // Only new colours make the encoder's keyframe a cut to trust without looking: a changed
        // structure alone may be the end of a whip pan or a zoom, and colours a little changed the
        // end of a GOP restarted on motion. And only after a calm keyframe: a GOP that opens in
        // motion or in a fade (a run going on into it) may hold another change before its end.
        // A GOP early only against the encoder's longest is looked at, never trusted unseen: as long
        // as any seen so far, it may hold a dissolve or another cut before its end, and the encoder
        // may have started its keyframe in a blend.
        let trustedEarlyKey =
            changedAtEarlyKey && earlyAmongSeen && distance >= settings.keyframeDistanceAlways
            && (gop.sample?.activity ?? .infinity) <= calm
            // Calm only where the pictures after the keyframes moved at all: one that repeats its
            // keyframe (a time-lapse, a slow source brought to a faster rate) says nothing of the
            // shot's motion.
            && min(activity, next?.activity ?? 0) >= settings.repeatedPictureActivity
        let decision: String
        let decodedBefore = decodedFrames
        // A black or white keyframe: a fade's hold (an encoder restarts on a fade's ramp, and the
        // last GOP has no keyframe after it to compare with), measured whole from the frames.
        let blankKey =
            gop.sample.map { sample in
                let entry = SceneDetector.entry(time: sample.time, thumbnail: sample.thumbnail), limits = detector.settings
                // Flat, so a dark shot (under water, at night) is not taken for black.
                return (entry.luma < limits.darkLuma || entry.luma > limits.brightLuma) && entry.lumaSpread < limits.flatLuma
            } ?? false
        // The last GOP has no keyframe after it: nothing tells whether its picture changed, so it is
        // looked at frame by frame (at most one GOP more per video).
        let unseenEnd = isLast && settings.lastGOPFrameByFrame && gop.packets.count > 1
        // (A keyframe early against the GOPs seen is judged as such; one early only against the
        // encoder's longest GOP, never trusted unseen, is still suspected on its colours and layout.)
        let suspected =
            spike || ((colourJump || layoutJump) && !earlyAmongSeen) || (changedAtEarlyKey && (!calmAfter || !trustedEarlyKey))
            || continuing || blankKey || unseenEnd
        // The encoder already found the cut's exact frame: the keyframe that ends this GOP.
        let cutOnNextKeyframe = !suspected && trustedEarlyKey && next != nil
        let startsRun = denseActiveThrough == nil || denseActiveThrough! < gop.index - 1
        // The first picture shown after the keyframe (where the sample run measured its activity),
        // and at least two steps, so a lone one can be told from the start of a burst.
        let probeTime =
            activityJump && !suspected && startsRun
            ? gop.packets.dropFirst().lazy.compactMap { $0.pts.map(self.stream.seconds) }.first { $0 > gop.keyTime }
                .map { max($0, gop.keyTime + 2 * nominalInterval) } : nil
        if suspected || probeTime != nil {
            // A cut somewhere inside, or a gradual change: find it frame by frame.
            // The footage's motion: this keyframe's, unless it moved far more than the keyframes
            // either side (its sample run may span the very cut the run is to find).
            try ensureDenseContinuity(for: gop.index, baseline: activityJump ? max(activityBefore, next?.activity ?? 0) : gop.sample?.activity)
            // The GOP before, kept in case a dissolve or fade was already under way at this keyframe.
            let before = startsRun ? lastSampled.flatMap { $0.index == gop.index - 1 ? $0 : nil } : nil
            // The change a spike points at is placed once its frame has been shown and judged.
            let spikeTime = spike ? gop.packets[spikeIndex].pts.map(stream.seconds) ?? .infinity : probeTime ?? -Double.infinity
            let stopAfter = max(spikeTime, gop.intraPictures.last.map { gop.packets[$0].pts.map(stream.seconds) ?? .infinity } ?? -.infinity)
            // A long GOP's other spikes: each judged before the run ends (reached over the anchors).
            let laterSpikes = localSpikes(in: gop).map { $0 - taken }.filter { $0 > 0 }
            // Keyframes alike at both ends: the spike is the only thing to look at (a short insert,
            // a flash, or nothing). The anchors before it are decoded, the run starts a cut window
            // before it, and it ends as soon as the spike has been judged.
            let endsAlike = gop.sample.flatMap { a in next.map { looksAlike(a.thumbnail, $0.thumbnail) } } ?? false
            let anchorsUntil = spike && endsAlike && startsRun ? max(0, spikeIndex - settings.spikeLookBackPackets) : 0
            var ending = try decodeDense(
                gop.packets[taken...], towards: next, after: stopAfter, anchorsUntil: anchorsUntil,
                settledAtStart: endsAlike, checkingStart: before != nil && anchorsUntil == 0 && probeTime == nil,
                probingThrough: probeTime, laterSpikes: laterSpikes)
            if ending == .beganMidChange, let before {
                // Decode the GOP before it too, and this one again after it, so the change is measured whole.
                detector.discardRun()
                dense?.flush()
                lastDenseThumbnail = nil
                ending = try decodeDense(
                    (before.packets + gop.packets)[...], towards: next, after: stopAfter, anchorsUntil: 0,
                    settledAtStart: false, checkingStart: false)
            }
            decision =
                ending == .probed
                ? "probed, nothing stands out" + (cutOnNextKeyframe ? "; cut on the next keyframe" : "")
                : (probeTime != nil ? "probed, a step stands out: " : "")
                    + (ending == .stopped ? "decoded until the change was placed" : "decode in full")
            // The run ended in this GOP with no change at its spike's frame (or within three frames
            // of it): the spike was none.
            if spike && ending == .stopped && !detector.changes.contains(where: { $0.covers(spikeTime, within: 3 * nominalInterval) }) {
                idleSpike = (gop.index, spikeShare)
            }
            // A probe that found nothing leaves the GOP as a sampled one, with the cut its early
            // keyframe shows (the probe looked at its start only).
            lastSampled = ending == .probed ? gop : nil
            if ending == .probed, cutOnNextKeyframe, let next { addKeyframeCut(from: gop, to: next) }
            if ending == .whole || ending == .beganMidChange {
                denseActiveThrough = gop.index
                // The GOP after this one (the scanner's current one once no other waits).
                try releaseLeanDecoder(before: awaiting.first ?? current.flatMap { $0.index == gop.index + 1 ? $0 : nil })
            }
        } else if cutOnNextKeyframe, let next {
            decision = "cut on the next keyframe"
            // Kept at hand as a sampled GOP is: an encoder restarts on a fade's ramp too, and the
            // next GOP's run then begins in the fade and decodes this one to measure it whole (the
            // fade absorbs the cut).
            lastSampled = gop
            if denseActiveThrough != nil { try endDense(finalThumbnail: gop.sample.map { ($0.time, $0.thumbnail) }) }
            addKeyframeCut(from: gop, to: next)
        } else {
            decision = "sampled"
            if denseActiveThrough != nil { try endDense(finalThumbnail: gop.sample.map { ($0.time, $0.thumbnail) }) }
            // Kept at hand (its packets only) in case the next GOP finds a change already under
            // way at its keyframe.
            lastSampled = gop
        }

        if Self.debug {
            FileHandle.standardError.write(
                Data(
                    String(
                        format:
                            "gop %d at %.3f: activity %.2f (median %.2f), %d packets, colour %.3f (typical %.3f%@), spike %@ (%.1f at %d, %.2f of the keyframe%@), structure %.1f (around %.1f), layout %@, early %@, continuing %@: %@ (%d decoded)\n",
                        gop.index, gop.keyTime, gop.sample?.activity ?? -1, recentActivities.quantile(0.5), gop.packets.count, distance,
                        typicalDistance, colourJump ? ", a jump" : "", spike ? "yes" : "no", spikeRatio, spikeIndex, spikeShare,
                        rhythm ? ", rhythm" : "", structure, structureAround,
                        layoutJump ? "yes" : (activityJump ? "activity" : "no"), early ? "yes" : "no", continuing ? "yes" : "no", decision,
                        decodedFrames - decodedBefore
                    ).utf8))
        }
    }
}
