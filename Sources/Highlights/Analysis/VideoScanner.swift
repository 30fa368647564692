import FaceDetection
import Foundation
import Media
import MomentsSupport

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
        /// The face detector the samples are searched with, or why there is none.
        var faces = FaceDetector.standard
        /// Packets decoded after each keyframe: the first one is the first predicted picture, whose
        /// motion vectors all point at the keyframe.
        var sampleRunPackets = 1
        /// GOPs longer than this, or holding more compressed bytes, are decoded in full as they come
        /// (too few keyframes to sample, too much to buffer). Camera GOPs are 0.5–10 s.
        var longGOP = 12.0
        var longGOPBytes = 48 << 20
        /// A GOP whose keyframes' colours differ by more than this is always checked frame by frame…
        var keyframeDistanceAlways = 0.3
        /// A keyframe's sample run moved less than this: the picture after it repeats it.
        var repeatedPictureActivity = 0.05
        /// …and one whose differ by more than the floor and the ratio times the recent typical distance.
        var keyframeDistanceFloor = 0.12
        var keyframeDistanceRatio = 2.5
        var packetSpikeRatio = 2.5
        /// …and this times the median spike ratio of recent GOPs.
        var spikeRecurrenceRatio = 1.5
        /// A spike within this factor of the size (against its keyframe's) of one that came to
        /// nothing in the last `spikeRhythmGOPs` GOPs is the content's rhythm, not a change.
        var spikeRhythmRatio = 1.5
        var spikeRhythmGOPs = 2
        /// Packets decoded whole before a spike reached over the anchors: the detector's cut window
        /// and a few for reordering.
        var spikeLookBackPackets = 14
        /// In a GOP longer than twice this (seconds), a packet this far either side of a picture
        /// is what the picture is measured against for a spike (0: the GOP's only).
        var localSpikeWindow = 1.0
        /// A keyframe whose sample run moved this much, and this many times as much as the
        /// keyframes either side, has its first frames decoded to see whether one step stands out.
        var activityJumpFloor = 3.0
        var activityJumpRatio = 3.0
        /// A run that begins in a burst of motion (a whip pan or a zoom under way at its keyframe)
        /// has its start judged after the burst, if it ends within this many frames (0: always
        /// from the first frame).
        var longestStartBurst = 15
        /// A step onto a keyframe that stands out as a cut's is taken for the first of a burst of
        /// motion begun there (the run goes on into the GOP) only when the keyframe's own motion is
        /// at least this share of it (whip pans and zooms measured 0.3–1.3 of their first step, the
        /// new shot after a cut 0.01–0.18 of the cut's).
        var burstPace = 0.2
        /// Seconds a blend-like drift with no dissolve found in it is followed from GOP to GOP
        /// (the longest dissolve the detector looks for is three seconds).
        var longestDrift = 4.0
        /// The video's last GOP, with no keyframe after it to compare its own with, is decoded frame
        /// by frame (false: judged as any other, by its packets alone).
        var lastGOPFrameByFrame = true
        /// An encoder that starts GOPs on the cuts it finds and wrote its longest GOP in the stream
        /// (x264, x265): a GOP shorter than that ends early, on a cut, even where every GOP so far
        /// did (false: early only against the GOPs seen so far).
        var readsEncoderKeyInterval = true
        /// GOPs sampled ahead of the one being decided, and the compressed bytes they may hold.
        var pipelineDepth = 8
        var pipelineBytes = 64 << 20
    }

    struct GOP {
        var index: Int
        var packets: [Packet] = []
        var keyTime: Double
        var job: SampleJob
        var sample: VideoSample? = nil
        /// Seconds to the next keyframe, once it has arrived.
        var interval: Double? = nil
        var denseDecoded = false
        var bytes = 0
        /// Indices in `packets` of intra pictures that are no keyframes (an encoder's scene cut).
        var intraPictures: [Int] = []
    }

    let stream: MediaStream
    let settings: Settings
    let runners: [SampleRunner]
    /// Opened at the start (an undecodable stream fails there); a lean scanner (pictures beyond 4K)
    /// frees it once each GOP is decoded and opens another when the next GOP needs one.
    var dense: Decoder?
    let denseOptions: Decoder.Options
    let lean: Bool
    let thumbnailer: Thumbnailer
    /// Searches densely decoded pictures for faces beside the scan; what it finds.
    let denseFaces: FaceSearch?
    let facesFound = FacesFound()
    let detector: SceneDetector
    let frame = Frame()
    let width: Int
    let nominalInterval: Double

    var current: GOP?
    var lastSampled: GOP?
    /// Closed GOPs waiting for the next one's sample before their fate is decided.
    var awaiting: [GOP] = []
    var gopCount = 0
    var denseActiveThrough: Int?
    var denseContinuous = false
    /// The dense decoder exports motion vectors only while it stands in for the sample runs (long GOPs).
    var denseMotion = false
    var lastDenseSampleTime = -Double.infinity
    /// When faces were last looked for (a keyframe's or a densely decoded picture's time).
    var lastFaceTime = -Double.infinity
    /// The least time between two pictures searched for faces: every other second, which keeps
    /// the search within the analysis's budget (docs/engine.md#faces).
    static let faceInterval = 1.9
    var lastDenseThumbnail: (time: Double, thumb: Thumbnail)?
    /// Frames shown before this time are anchors of a quick pass, not part of the detector's run.
    var densePushFrom = -Double.infinity
    /// A run ended before a long GOP's later spike, to begin again a cut window before it: the
    /// baseline should no anchor be measured, and the motion between the anchors decoded so far.
    var resumedRun: (fallback: Double, activities: [Double], lastAnchor: (time: Double, thumb: Thumbnail)?)?
    var recentKeyDistances = RecentValues()
    var recentKeyIntervals = RecentValues()
    /// The longest GOP the encoder makes (seconds), where it wrote it in the stream and starts GOPs
    /// early on the cuts it finds.
    var encoderKeyInterval: Double?
    var recentActivities = RecentValues()
    var recentLayoutDistances = RecentValues()
    var recentStructureDistances = RecentValues()
    var recentSpikeRatios = RecentValues()
    /// The last spike that came to nothing (its GOP decoded, no change found) or was taken for the
    /// content's rhythm: its GOP and its size against its keyframe's.
    var idleSpike: (index: Int, share: Double)?
    /// The keyframe of the first GOP decoded because a change was under way where the one before ended.
    var followingSince: Double?
    var lastTime: Double?

    var samples: [SampleFeatures] = []
    var frameTimes: [Double] = []
    /// Compressed bytes per whole second of video.
    var bytesPerSecond: [Int] = []
    var decodedFrames = 0
    /// Every packet's timestamps, size and picture kind, for the copy path.
    var packets: PacketIndex

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
        // threads instead of two runners: one decoder's pictures fewer, and as fast where the
        // codec decodes rows in parallel (10-bit HEVC's wavefronts).
        let runnerCount = info.pictureBytes > MediaLimits.frameThreadingBytes ? 1 : 2
        runners = try (0..<runnerCount).map {
            try SampleRunner(
                stream: stream, info: info, nominalInterval: nominalInterval, sliceThreads: 3 - runnerCount, lean: lean,
                faces: try? settings.faces.get(), facesAside: runnerCount == 1, label: "moments.sample-runner.\($0)")
        }
        denseOptions = .video(for: info, threads: 2, analysis: true)
        dense = try Decoder(stream: stream, options: denseOptions)
        self.lean = lean
        thumbnailer = try Thumbnailer(info: info)
        denseFaces = try (try? settings.faces.get()).map { try FaceSearch(detector: $0, info: info, label: lean ? nil : "moments.scan.faces") }
        width = info.width
    }

    deinit {
        // Runners may still hold jobs; let them finish before their decoders go.
        for gop in awaiting + (current.map { [$0] } ?? []) where gop.job.submitted { _ = gop.job.wait() }
    }

    /// The packet's presentation time, repaired when the container has none.
    func time(of packet: Packet) -> Double {
        let t = packet.pts.map(stream.seconds) ?? packet.dts.map(stream.seconds) ?? ((lastTime ?? -nominalInterval) + nominalInterval)
        lastTime = t
        return t
    }

    func feed(_ packet: Packet) throws {
        let t = time(of: packet)
        frameTimes.append(t)
        packets.add(packet)
        let second = max(0, Int(saturating: t))
        if second < 100_000 {
            if bytesPerSecond.count <= second { bytesPerSecond.append(contentsOf: repeatElement(0, count: second - bytesPerSecond.count + 1)) }
            bytesPerSecond[second] += packet.size
        }
        if packet.isKeyframe || current == nil {
            if current == nil, settings.readsEncoderKeyInterval,
                let options = stream.encoderOptions(firstPacket: packet),
                options.keyframesOnCuts, let frames = options.maximumKeyInterval
            {
                encoderKeyInterval = Double(frames) * nominalInterval
                if Self.debug {
                    FileHandle.standardError.write(Data(String(format: "encoder: GOPs of at most %d pictures, early on cuts\n", frames).utf8))
                }
            }
            try startGOP(with: packet, at: t)
            return
        }
        if denseContinuous {
            try decodeDense(packet)
            return
        }
        current!.packets.append(packet.reference())
        current!.bytes += packet.size
        if packets.bitstream?.isIntraPicture(packet.bytes) == true { current!.intraPictures.append(current!.packets.count - 1) }
        // An open GOP's leading pictures (shown before its keyframe, decoded after it) refer to the
        // GOP before: a run of the keyframe alone cannot decode them, so it takes the first picture
        // shown after the keyframe instead.
        if !current!.job.submitted && t > current!.keyTime {
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
            try finalize(last, next: nil, isLast: true)
        }
        current = nil
        try endDense(finalThumbnail: nil)
        for (index, faces) in facesFound.all() { samples[index].faces = faces }
        frameTimes.sort()
        samples.sort { $0.time < $1.time }
    }

}
