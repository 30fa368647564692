import Dispatch
import FaceDetection
import Media
import MomentsModel
import MomentsSupport

/// One sample run: a keyframe and the packet after it, handed from the demuxing thread to a runner.
/// The scanner fills `packets` and then never touches the job again until `wait()` returns.
final class SampleJob: @unchecked Sendable {
    private(set) var packets: [Packet] = []
    private let done = DispatchSemaphore(value: 0)
    private var outcome: SampleOutcome?
    private(set) var submitted = false
    /// Whether the keyframe is searched for faces.
    let findsFaces: Bool

    init(key: Packet, findsFaces: Bool = true) {
        packets.append(key.reference())
        self.findsFaces = findsFaces
    }

    func add(_ packet: Packet) { packets.append(packet.reference()) }

    func submit(to runner: SampleRunner) {
        guard !submitted else { return }
        submitted = true
        runner.run(self)
    }

    fileprivate func finish(_ outcome: SampleOutcome) {
        precondition(self.outcome == nil, "a sample job finishes once")
        self.outcome = outcome
        packets.removeAll()
        done.signal()
    }

    /// Blocks until the runner is done.
    func wait() -> SampleOutcome {
        if let outcome { return outcome }
        done.wait()
        return outcome!
    }
}

struct SampleOutcome: Sendable {
    var sample: VideoSample?
    var decodedFrames = 0
}

/// Decodes sample runs on a thread of its own, so keyframes (the costly pictures) of successive
/// GOPs decode in parallel with each other and with the scanner's demuxing and dense decoding.
/// A lean runner (pictures beyond 4K) decodes each run on the caller's thread instead, with a
/// decoder opened for the run and freed after it, so its pictures never add to the dense decoder's.
final class SampleRunner: @unchecked Sendable {
    // Used only on `thread` (or, lean, on the caller's).
    private var decoder: Decoder?
    private let options: Decoder.Options
    private let lean: Bool
    private let thumbnailer: Thumbnailer
    private let faceSearch: FaceSearch?
    private let frame = Frame()
    private let stream: MediaStream
    private let width: Int
    private let nominalInterval: Double
    private let thread: SerialThread?

    /// `sliceThreads` decoding threads work on each picture's slices or wavefront rows together
    /// (no frame threading: a run is two pictures). `facesAside`: keyframes are searched for
    /// `faces` on a thread beside the runner's (for a single runner, whose runs the scan waits
    /// for; of two, each searches while the other decodes).
    init(
        stream: MediaStream, info: MediaInfo, nominalInterval: Double, sliceThreads: Int = 1, lean: Bool = false,
        faces: FaceDetector? = nil, facesAside: Bool = false, label: String
    ) throws {
        var options = Decoder.Options.video(for: info, threads: 1, analysis: true)
        options.threads = sliceThreads
        // A run never takes an open GOP's leading pictures, and drains right after its second picture.
        options.showsPicturesBeforeRecovery = true
        self.options = options
        self.lean = lean
        decoder = lean ? nil : try Decoder(stream: stream, options: options)
        thumbnailer = try Thumbnailer(info: info)
        faceSearch = try faces.map { try FaceSearch(detector: $0, info: info, label: facesAside && !lean ? label + ".faces" : nil) }
        self.stream = stream
        self.width = info.width
        self.nominalInterval = nominalInterval
        thread = lean ? nil : try SerialThread(name: label)
    }

    func run(_ job: SampleJob) {
        if let thread {
            thread.async { self.finish(job) }
        } else {
            finish(job)
        }
    }

    private func finish(_ job: SampleJob) {
        let (outcome, key) = decode(job.packets, keepsKey: job.findsFaces && faceSearch != nil)
        if let key, let faceSearch {
            faceSearch.search(key) { faces in
                var outcome = outcome
                outcome.sample?.faces = faces
                job.finish(outcome)
            }
        } else {
            job.finish(outcome)
        }
    }

    /// Decodes the run and describes the keyframe: picture, sharpness, change to the next frame,
    /// and motion from the first predicted frame's vectors (which all point at the keyframe).
    /// `keepsKey`: the keyframe's picture is returned too, to be searched for faces.
    private func decode(_ packets: [Packet], keepsKey: Bool) -> (SampleOutcome, Frame?) {
        var outcome = SampleOutcome()
        var frames: [(time: Double, thumbnail: Thumbnail, motion: MotionEstimate?, isKey: Bool)] = []
        var key: (time: Double, sharpness: Double, picture: Frame?)?
        func collect(_ frame: Frame) throws {
            outcome.decodedFrames += 1
            guard let ticks = frame.timestamp else { return }
            let t = stream.seconds(ticks)
            let isKey = frame.isKeyframe || frame.pictureType == .intra
            var motion: MotionEstimate?
            if !isKey, let key, frame.pictureType == .predicted {
                motion = MotionEstimate(frame: frame, width: width, interval: abs(t - key.time))
            }
            if isKey && key == nil { key = (t, try thumbnailer.sharpness(of: frame), keepsKey ? try frame.clone() : nil) }
            frames.append((t, try thumbnailer.thumbnail(of: frame), motion, isKey))
        }
        do {
            let decoder = try self.decoder ?? Decoder(stream: stream, options: options)
            decoder.flush()
            for packet in packets { try decoder.decode(packet, into: frame, collect) }
            try decoder.decode(nil, into: frame, collect)
        } catch {
            // A damaged run: describe the keyframe from whatever did decode.
        }
        guard let first = frames.first(where: { $0.isKey }) ?? frames.first else { return (outcome, nil) }
        let nearest = frames.filter { $0.time != first.time }.min { abs($0.time - first.time) < abs($1.time - first.time) }
        let activity = nearest.map { first.thumbnail.activity(to: $0.thumbnail, seconds: $0.time - first.time, frameInterval: nominalInterval) }
        outcome.sample = VideoSample(
            time: first.time, thumbnail: first.thumbnail, sharpness: key?.sharpness ?? 0,
            brightness: first.thumbnail.meanLuma, activity: activity,
            motion: frames.compactMap(\.motion).first)
        return (outcome, key?.picture)
    }
}
