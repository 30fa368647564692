import Media

/// A description of synthetic footage whose every interesting fact (cut frames, event times,
/// orientation, audio loudness) is known exactly, because it is made here from this description.
public struct SyntheticVideo: Sendable {
    /// Bump whenever the writer or painter changes what a description produces (caches key on it).
    public static let writerVersion = 6

    public enum Transition: Sendable, Equatable {
        /// The next scene starts on the boundary frame.
        case cut
        /// `frames` frames centred on the boundary blend the two scenes.
        case dissolve(frames: Int)
        /// The first scene fades to black over `frames / 2` frames, the next fades in over as many.
        case fadeThroughBlack(frames: Int)
        /// As `fadeThroughBlack`, through white.
        case fadeThroughWhite(frames: Int)
    }

    public enum Camera: Sendable, Equatable {
        /// A still camera: only the moving object changes.
        case still
        /// A steady pan of `pixelsPerFrame`.
        case pan(pixelsPerFrame: Double)
        /// A hand-held camera: jitter of `amplitude` pixels every frame.
        case shaky(amplitude: Double)
        /// A phone held in a hand: a slow drift of `drift` pixels per frame with a smooth sway of up
        /// to `sway` pixels (breathing, steps), as recorded footage moves.
        case handheld(drift: Double, sway: Double)
    }

    public struct Scene: Sendable, Equatable {
        public var frames: Int
        public var camera: Camera
        /// How the scene begins (ignored for the first scene).
        public var transitionIn: Transition
        /// Tone frequency of this scene's soundtrack.
        public var toneHz: Double
        /// Paint with an earlier scene's texture and colour (the same place filmed again: an insert
        /// returning to it, or a jump cut); nil gives the scene its own.
        public var look: Int?
        /// Camera offset in pixels added to the scene's own motion (a jump cut reframes).
        public var shift: Int
        /// How much light the scene has: 1 as painted, 0 black (a lens cap, a pocket).
        public var light: Double = 1
        /// Out of focus: a box blur of this radius in pixels over the whole picture.
        public var blur: Int = 0
        /// The scene's bright object, when it crosses the frame: its centre moves from x = `from` to
        /// x = `to` (fractions of the width) at mid-height, evenly over the scene's frames.
        public var subject: (from: Double, to: Double)? = nil
        /// People facing the camera, drawn over the scene where they stand in the frame.
        public var faces: [Face] = []

        public init(
            frames: Int, camera: Camera = .still, transitionIn: Transition = .cut, toneHz: Double = 220,
            look: Int? = nil, shift: Int = 0
        ) {
            self.frames = frames
            self.camera = camera
            self.transitionIn = transitionIn
            self.toneHz = toneHz
            self.look = look
            self.shift = shift
        }

        public static func == (a: Scene, b: Scene) -> Bool {
            a.frames == b.frames && a.camera == b.camera && a.transitionIn == b.transitionIn && a.toneHz == b.toneHz
                && a.look == b.look && a.shift == b.shift && a.light == b.light && a.blur == b.blur
                && a.subject?.from == b.subject?.from && a.subject?.to == b.subject?.to && a.faces == b.faces
        }

        /// Where the scene's subject is at its frame `local`, as fractions of the width and height; nil
        /// when the scene has no subject crossing it.
        public func subjectCentre(atLocalFrame local: Int) -> (x: Double, y: Double)? {
            guard let subject else { return nil }
            let t = frames > 1 ? Double(min(max(local, 0), frames - 1)) / Double(frames - 1) : 0
            return (subject.from + (subject.to - subject.from) * t, 0.5)
        }
    }

    /// A frontal face (`FacePainter`) in a scene: its centre as fractions of the picture's width
    /// and height, its width as a fraction of the picture's height, and its skin's luma.
    public struct Face: Sendable, Equatable {
        public var x: Double
        public var y: Double
        public var size: Double
        public var skin: Double

        public init(x: Double, y: Double, size: Double, skin: Double = 190) {
            self.x = x
            self.y = y
            self.size = size
            self.skin = skin
        }
    }

    /// Something that happens to the picture within a shot and must not be taken for a new shot.
    public struct Effect: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// A camera flash: the picture washes towards white for the effect's frames.
            case flash
            /// A whip pan: the camera swings `pixels` sideways over the effect's frames (speeding up,
            /// then slowing down), blurred by its motion, and stays there.
            case whip(pixels: Int)
            /// A quick zoom in to `factor` times over the effect's frames, held after.
            case zoom(factor: Double)
        }
        public var kind: Kind
        public var startFrame: Int
        public var frames: Int
        /// Eased in and out as a hand-moved camera is; else at one speed from its first frame to
        /// its last, as a motorised zoom or an editor's digital move is.
        public var eased: Bool

        public init(_ kind: Kind, startFrame: Int, frames: Int, eased: Bool = true) {
            self.kind = kind
            self.startFrame = startFrame
            self.frames = frames
            self.eased = eased
        }

        /// How far along the effect is at `frame`: 0 before, 1 once done.
        func progress(at frame: Int) -> Double {
            let t = max(0, min(1, Double(frame - startFrame + 1) / Double(max(1, frames))))
            return eased ? t * t * (3 - 2 * t) : t
        }
    }

    /// A stretch of fast motion and loud, percussive sound.
    public struct Event: Sendable, Equatable {
        public var startFrame: Int
        public var frames: Int

        public init(startFrame: Int, frames: Int) {
            self.startFrame = startFrame
            self.frames = frames
        }
    }

    public enum AudioCodec: String, Sendable { case aac, opus = "libopus", mp3 = "libmp3lame", pcm = "pcm_s16le" }

    public var width: Int
    public var height: Int
    public var frameRate: Int
    public var scenes: [Scene]
    public var events: [Event] = []
    public var effects: [Effect] = []
    public var videoCodec: String = "libx264"
    /// Pixel format the encoder gets (`yuv420p`, `yuv420p10le`, `yuvj420p`, …).
    public var pixelFormat: String = "yuv420p"
    public var audio: AudioCodec? = .aac
    public var audioSampleRate: Int = 48000
    /// Muxer name; nil picks from the file extension.
    public var container: String? = nil
    /// Clockwise rotation (0, 90, 180, 270) written into the display matrix.
    public var rotation: Int = 0
    /// Uneven frame spacing (alternating 1/frameRate × 0.75 and × 1.25).
    public var variableFrameRate: Bool = false
    /// Frames run at `frameRate` × 1000/1001 (23.976, 29.97, 59.94), as cameras sold for NTSC
    /// regions record; `frameRate` stays the whole rate things move by.
    public var ntscRate = false
    /// Stretches at other rates, repeated until the video ends (a phone in low light drops to 20 fps
    /// and back); empty: every frame at the nominal rate. Takes precedence over `variableFrameRate`.
    public var rateRuns: [RateRun] = []
    /// The soundtrack's own samples (mono, `soundtrackRate` per second, full scale 1) in place of
    /// the scenes' tones: speech, music or noise made by a test; silence after its end.
    public var soundtrack: [Float]? = nil
    public var soundtrackRate = 16_000
    /// The soundtrack stops this many seconds in (a recording whose sound ended early); nil: it
    /// lasts as long as the pictures.
    public var audioDuration: Double? = nil
    /// Presentation time of the first picture and the first sample: a clip cut from a longer
    /// recording (MP4 and MOV write it as an edit list).
    public var startTime: Double = 0
    /// Frames that carry a sync mark: the picture washes towards white for that frame, and a loud
    /// click starts on the soundtrack at the frame's time; a player that keeps sound and picture
    /// together shows each flash as its click sounds.
    public var syncMarks: [Int] = []

    /// A sync mark's click: `syncClickSeconds` of a 2 kHz tone at `syncClickLevel` (full scale 1).
    public static let syncClickLevel = 0.8
    public static let syncClickSeconds = 0.004

    /// `frames` frames at `rate` frames per second.
    public struct RateRun: Sendable, Equatable {
        public var frames: Int
        public var rate: Int

        public init(frames: Int, rate: Int) {
            self.frames = frames
            self.rate = rate
        }
    }
    /// Keyframe interval in frames (0: the encoder's default).
    public var gopSize: Int = 0
    /// Frames coded as keyframes wherever the GOP size puts the others: an encoder's own scene-cut
    /// keyframes, placed by hand so a test knows where they are.
    public var forcedKeyframes: [Int] = []
    public var bitRate: Int = 0
    public var encoderOptions: [String: String] = ["preset": "veryfast"]
    /// x264 as a phone encodes: keyframes only where the GOP size puts them, none at the cuts
    /// (x264's own scene-cut detection off).
    public static let phoneX264Options = ["preset": "veryfast", "x264-params": "scenecut=0"]
    /// Amplitude of per-frame sensor noise on luma (0: none). Real cameras' noise is what makes
    /// predicted frames cost bits; benchmark footage uses it to look like a phone's to an encoder.
    public var noise = 0
    /// Frames each noise pattern is held (1: new noise every frame). Held a dozen frames, each
    /// renewal is a picture the encoder codes nearly whole between tiny ones, as a transcoded
    /// file's old keyframes or a camera's intra refresh are.
    public var noiseHeldFrames = 1
    /// Frames each painted picture is shown (1: a new one every frame), noise and all, as a
    /// time-lapse or a slow source brought to this frame rate repeats its pictures.
    public var heldFrames = 1
    /// Stored pixel shape (width, height); (4, 3) stores 4:3-wide pixels.
    public var sampleAspectRatio: (Int, Int) = (1, 1)
    /// false writes only the soundtrack (an audio-only file).
    public var hasVideo = true
    /// Brightness of every scene (1 as painted, 0.1 a dark night shot).
    public var brightness: Double = 1
    /// Colourfulness of every scene: 1 paints hues so strong that, on textured luma, many pixels
    /// lie outside the BT.709 gamut (fine for telling scenes apart); 0.5 stays inside it, as a
    /// camera's pictures do.
    public var saturation: Double = 1

    /// Colour tags written into the stream: `bt709`, or `hlg` (BT.2020 primaries and matrix, HLG
    /// transfer: tags only, the pixels are painted as they are); nil writes none.
    public var colorTags: ColorTags? = nil

    public enum ColorTags: String, Sendable { case bt709, hlg }

    /// Paint a white bar down the stored picture's left edge (top edge once rotated 90° clockwise).
    public var orientationMarker: Bool = false
    /// The camera's start timecode (`HH:MM:SS:FF`), written as MOV/MP4 do (a `tmcd` track).
    public var timecode: String? = nil

    public init(width: Int, height: Int, frameRate: Int = 30, scenes: [Scene]) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.scenes = scenes
    }

    public var frameCount: Int { scenes.reduce(0) { $0 + $1.frames } }

    /// Index of the first frame of each scene after the first: the ground-truth cut positions.
    public var boundaryFrames: [Int] {
        var result: [Int] = []
        var position = 0
        for scene in scenes.dropLast() {
            position += scene.frames
            result.append(position)
        }
        return result
    }

    /// Frames per second as the timestamps run (`frameRate`, or its NTSC rate).
    public var nominalRate: Double { ntscRate ? Double(frameRate) * 1000 / 1001 : Double(frameRate) }

    /// Presentation time of frame `index`, in seconds from the first picture (`startTime` not added).
    public func time(ofFrame index: Int) -> Double {
        if !rateRuns.isEmpty { return runsTime(ofFrame: index) }
        let nominal = 1.0 / nominalRate
        guard variableFrameRate else { return Double(index) * nominal }
        // Pairs of frames take exactly two nominal durations: 0.75 + 1.25.
        let pairs = Double(index / 2) * 2 * nominal
        return index % 2 == 0 ? pairs : pairs + 0.75 * nominal
    }

    private func runsTime(ofFrame index: Int) -> Double {
        let period = rateRuns.reduce(0) { $0 + max(1, $1.frames) }
        let periodSeconds = rateRuns.reduce(0.0) { $0 + Double(max(1, $1.frames)) / Double(max(1, $1.rate)) }
        var time = Double(index / period) * periodSeconds
        var left = index % period
        for run in rateRuns {
            let frames = max(1, run.frames)
            time += Double(min(left, frames)) / Double(max(1, run.rate))
            left -= min(left, frames)
            if left == 0 { break }
        }
        return time
    }

    /// The sync marks' times in seconds from the first picture.
    public var syncMarkTimes: [Double] { syncMarks.map(time(ofFrame:)) }

    /// Duration of the whole video in seconds.
    public var duration: Double { time(ofFrame: frameCount) }

    /// The boundary times in seconds.
    public var boundaryTimes: [Double] { boundaryFrames.map(time(ofFrame:)) }

    /// Event intervals in seconds.
    public var eventTimes: [ClosedRange<Double>] {
        events.map { time(ofFrame: $0.startFrame)...time(ofFrame: $0.startFrame + $0.frames) }
    }
}
