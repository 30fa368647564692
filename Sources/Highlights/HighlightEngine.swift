import Foundation
import Media
import MomentsModel
import MomentsSupport

/// What to make.
public struct HighlightSettings: Sendable {
    /// Target length of the highlight in seconds.
    public var duration = Double(HighlightLimits.defaultTargetDuration)
    public var quality: Quality = .high
    /// `auto` copies the source's video where it allows; `h264` always encodes H.264.
    public var codec: VideoCodecChoice = .auto
    public var limits = MediaLimits()
    /// The user's segment lengths and count, and the frame's shape.
    public var choices = HighlightChoices()
    /// Where to write the poster JPEG and the thumbnail strip JPEG; nil: none.
    public var stills: StillPaths?
    /// How the analysis decodes (its triggers' settings): the defaults, changed only by tests.
    var scanning = VideoScanner.Settings()
    /// A soundtrack: the cuts go on its beat and it is mixed under the sound. Nil: the source's own sound only.
    public var music: MusicSettings?

    public init(
        duration: Double = 30, quality: Quality = .high, codec: VideoCodecChoice = .auto, limits: MediaLimits = MediaLimits(),
        choices: HighlightChoices = HighlightChoices()
    ) {
        self.duration = duration
        self.quality = quality
        self.codec = codec
        self.limits = limits
        self.choices = choices
    }

    var rules: SegmentRules { SegmentRules(choices, target: duration) }
    /// The frame rate asked for: the source's own under `quality=original`, whatever `choices` say.
    public var frameRate: FrameRateChoice { quality == .original ? .source : choices.fps }
}

/// Where a highlight's still pictures go.
public struct StillPaths: Sendable {
    public var poster: String?
    public var thumbnails: String?

    public init(poster: String?, thumbnails: String?) {
        self.poster = poster
        self.thumbnails = thumbnails
    }
}

/// The highlight engine: analysis, selection and render of one video. Blocking; run it off the
/// cooperative pool (a worker thread). Reports progress and honours cancellation between frames.
public struct HighlightEngine: Sendable {
    public init() { FFmpegLog.quiet() }

    /// Analyses `input` without rendering.
    public func analyze(
        input: String, settings: HighlightSettings = HighlightSettings(),
        cancellation: CancellationFlag = CancellationFlag(),
        progress: @escaping @Sendable (ProgressUpdate) -> Void = { _ in }
    ) throws(MomentsError) -> Analysis {
        let reporter = ProgressReporter(cancellation: cancellation, handler: progress)
        return try Self.mapErrors { try Analyzer.run(path: input, limits: settings.limits, scanning: settings.scanning, reporter: reporter) }
    }

    /// Analyses bytes read through `source` (`MemoryInput` for fuzzing); `name` is what messages call it.
    public func analyze(
        source: any RandomAccessInput, name: String, settings: HighlightSettings = HighlightSettings(),
        cancellation: CancellationFlag = CancellationFlag()
    ) throws(MomentsError) -> Analysis {
        let reporter = ProgressReporter(cancellation: cancellation, handler: { _ in })
        return try Self.mapErrors {
            try Analyzer.run(source: source, name: name, limits: settings.limits, scanning: settings.scanning, reporter: reporter)
        }
    }

    /// Returns freed heap memory to the system (glibc keeps it otherwise), so peak RSS is the
    /// larger of analysis and render, not their sum.
    static func releaseFreeMemory() {
        #if os(Linux)
            _ = glibcMallocTrim(0)
        #endif
    }

    /// Runs a render, turning a failure to write the file into an `io_error`.
    static func writing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as FFmpegError where error.code == -ENOSPC || error.code == -EIO || error.code == -EACCES {
            throw MomentsError(.ioError, "The highlight could not be written (\(error.reason)).")
        }
    }

    /// Turns any error into a `MomentsError` with a stable code.
    static func mapErrors<T>(_ body: () throws -> T) throws(MomentsError) -> T {
        do {
            return try body()
        } catch let error as MomentsError {
            throw error
        } catch let error as FFmpegError where error.code == -ENOMEM {
            throw MomentsError(.outOfMemory, "The video needs more memory than this worker allows (\(error.reason)).")
        } catch let error as FFmpegError {
            throw MomentsError(.corruptMedia, "The video could not be processed (\(error.reason)); the file may be damaged.")
        } catch {
            throw MomentsError(.internalError, "The highlight could not be made because of an internal error.")
        }
    }
}

extension HighlightEngine {
    /// Makes a highlight of `input` at `output`. On any failure (or cancellation) no file is left at `output`.
    public func highlight(
        input: String, output: String, settings: HighlightSettings = HighlightSettings(),
        cancellation: CancellationFlag = CancellationFlag(),
        progress: @escaping @Sendable (ProgressUpdate) -> Void = { _ in }
    ) throws(MomentsError) -> HighlightReport {
        let reporter = ProgressReporter(cancellation: cancellation, handler: progress)
        let clock = ContinuousClock()
        let started = clock.now
        let outputURL = URL(fileURLWithPath: output)
        let directory = outputURL.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MomentsError(.ioError, "The output folder \(directory.path) does not exist.")
        }
        let partial = directory.appendingPathComponent(".\(outputURL.lastPathComponent).partial-\(UUID().uuidString.prefix(8)).mp4").path
        defer { try? FileManager.default.removeItem(atPath: partial) }

        return try Self.mapErrors {
            var settings = settings
            // A track not analysed yet (uploaded with the video) is checked and analysed first:
            // a file that is no track fails before the video is read.
            if var music = settings.music, music.analysis == nil {
                music.analysis = try MusicAnalyzer.analyse(path: music.path)
                settings.music = music
            }
            let analysis = try Analyzer.run(path: input, limits: settings.limits, scanning: settings.scanning, reporter: reporter)
            let analyzed = clock.now
            // The analysis decoders are gone: give their memory back before the encoder takes its share.
            Self.releaseFreeMemory()
            try reporter.report(.selecting, 0)
            let selection = SegmentSelector.select(from: analysis, target: settings.duration, rules: settings.rules)
            let selected = clock.now
            try reporter.report(.rendering, 0)
            let made:
                (
                    result: Renderer.Result, decision: RenderDecision, segments: [Segment], moves: [EdgeMove], crop: CropPlan?,
                    frames: FrameRatePlan, music: MusicReport?
                )
            if let music = settings.music {
                let m = try Self.renderWithMusic(
                    music, analysis, selection.segments, pauses: selection.pauses, input: input, to: partial,
                    settings: settings, reporter: reporter)
                made = (m.result, m.decision, m.segments, [], m.crop, m.frames, m.music)
            } else {
                let m = try Self.render(
                    analysis, selection.segments, pauses: selection.pauses, input: input, to: partial, settings: settings,
                    reporter: reporter)
                made = (m.result, m.decision, m.segments, m.moves, m.crop, m.frames, nil)
            }
            let (rendered, decision) = (made.result, made.decision)
            try reporter.report(.finishing, 0)
            let stills = try settings.stills.flatMap { paths in
                paths.poster == nil && paths.thumbnails == nil
                    ? nil
                    : try Self.stills(of: analysis, made.segments, input: input, settings: settings, crop: made.crop, reporter: reporter)
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? NSNumber)?.int64Value ?? 0
            // The last moment a cancellation undoes the work: from here on the files are saved,
            // and a cancellation that comes later is too late to take them back.
            try reporter.cancellation.check()
            if let stills, let paths = settings.stills { try stills.save(to: paths) }
            do {
                if FileManager.default.fileExists(atPath: output) { try FileManager.default.removeItem(atPath: output) }
                try FileManager.default.moveItem(atPath: partial, toPath: output)
            } catch {
                throw MomentsError(.ioError, "The highlight could not be saved to \(output).")
            }
            let finished = clock.now
            let total = (finished - started).inSeconds
            reporter.finish()
            return HighlightReport(
                input: analysis.info,
                settings: .init(
                    targetDuration: settings.duration, quality: settings.quality.rawValue, codec: settings.codec.rawValue,
                    minSegment: settings.choices.minSegment, maxSegment: settings.choices.maxSegment,
                    maxSegments: settings.choices.maxSegments, aspect: settings.choices.aspect.rawValue,
                    fps: settings.frameRate.rawValue),
                scenes: analysis.changes, segments: made.segments,
                output: .init(
                    duration: rendered.duration, width: rendered.width, height: rendered.height,
                    videoCodec: decision.mode == .copy ? analysis.info.videoCodec : "h264", audioCodec: "aac",
                    fileSize: size, silentAudio: rendered.silentAudio,
                    frameRate: made.frames.outputRate),
                // The copy path is taken only when every picture is shown (step 1).
                render: .init(
                    mode: decision.mode, reason: decision.reason, edgeMoves: made.moves, pictureStep: made.frames.step,
                    skippedPictures: rendered.skippedPictures),
                timings: .init(
                    analysis: (analyzed - started).inSeconds, selection: (selected - analyzed).inSeconds,
                    render: (finished - selected).inSeconds, total: total),
                realTimeFactor: analysis.info.duration / max(total, 1e-6),
                analysisRealTimeFactor: analysis.info.duration / max((analyzed - started).inSeconds, 1e-6),
                decodedFrames: analysis.decodedFrames, totalFrames: analysis.totalFrames, stills: stills?.report,
                speech: selection.pauses.isEmpty
                    ? nil
                    : SpeechEdits(segments: made.segments, pauses: selection.pauses, moved: selection.edgesMovedIntoPauses),
                reframe: made.crop.map { crop in
                    let shown = CropPlan.display(
                        x: 0, y: 0, width: crop.width, height: crop.height, frameWidth: crop.frameWidth,
                        frameHeight: crop.frameHeight, rotation: analysis.info.rotation)
                    return .init(
                        aspect: settings.choices.aspect.rawValue, width: shown.width, height: shown.height,
                        path: crop.path(rotation: analysis.info.rotation))
                },
                music: made.music)
        }
    }
}

/// Why segments cannot be moved onto a keyframe grid.
struct Unaligned: Error {
    var reason: String
}

extension HighlightEngine {
    /// Renders `segments` by the copy path where the source allows it, else by the encode path, with
    /// the segments moved onto the keyframe grid (copy: random access points; encode: keyframes,
    /// so no segment needs pre-roll decoding, when they are at most 2.5 s apart).
    ///
    /// Another shape than the source's (`aspect`) is always encoded: the window that follows the
    /// action is planned over the final segments (`Reframer`) and cropped from every picture.
    static func render(
        _ analysis: Analysis, _ segments: [Segment], pauses: SpeechPauses, input: String, to partial: String,
        settings: HighlightSettings, reporter: ProgressReporter
    ) throws -> (
        result: Renderer.Result, decision: RenderDecision, segments: [Segment],
        moves: [EdgeMove], crop: CropPlan?, frames: FrameRatePlan
    ) {
        let isShort = analysis.info.duration <= settings.duration + SegmentSelector.tolerance
        let rules = settings.rules
        let speechRefusal = Unaligned(
            reason: "the source's keyframes fall inside speech where the highlight cuts, so the edges are put in pauses and the video is encoded")
        let slack = SegmentRules.slack(for: analysis)
        /// The segments on `grid`, or why they cannot be. Edges go only to keyframes in pauses of
        /// the speech (where there is any), so no utterance is cut.
        func align(to grid: KeyframeGrid, aroundSpeech: Bool = true) -> Result<AlignedSelection, Unaligned> {
            let allows: (Double) -> Bool = { !aroundSpeech || pauses.keepsWhole($0, clearance: 0.3) }
            let aligned = SegmentSelector.align(
                segments, to: grid, shots: analysis.shots, target: isShort ? nil : settings.duration,
                rules: rules, slack: slack, allows: allows, score: { SegmentSelector.meanScore(analysis, $0, $1) })
            guard !aligned.segments.isEmpty, rules.admits(aligned.segments, slack: slack) else {
                if !pauses.isEmpty, case .success = align(to: grid, aroundSpeech: false) { return .failure(speechRefusal) }
                return .failure(
                    Unaligned(
                        reason: rules == .standard
                            ? "no shot is long enough to hold a whole GOP"
                            : "the chosen segment lengths do not fall on the source's keyframes"))
            }
            // Keyframes must not cost the highlight the length the selection reached.
            if !isShort {
                let miss = { (segments: [Segment]) in abs(segments.reduce(0) { $0 + $1.duration } - settings.duration) }
                if miss(aligned.segments) > SegmentSelector.tolerance && miss(aligned.segments) > miss(segments) + 1e-6 {
                    if !pauses.isEmpty, case .success = align(to: grid, aroundSpeech: false) { return .failure(speechRefusal) }
                    return .failure(Unaligned(reason: "the source's keyframes do not fall where a highlight of the target length can cut"))
                }
            }
            return .success(aligned)
        }
        let frames = FrameRatePlan(analysis: analysis, choice: settings.frameRate)
        var (decision, grid) = RenderDecision.decide(analysis, quality: settings.quality, codec: settings.codec, frames: frames)
        let reframer = try Reframer(path: input, analysis: analysis, aspect: settings.choices.aspect, cancellation: reporter.cancellation)
        if reframer != nil {
            let shape = settings.choices.aspect.rawValue
            decision = RenderDecision(
                mode: .encode,
                reason: decision.mode == .copy
                    ? "a \(shape) frame is a crop that follows the action, so the picture is encoded anew"
                    : decision.reason + "; the \(shape) frame is a crop that follows the action")
            grid = nil
        }
        if let grid {
            switch align(to: grid) {
            case .success(let aligned):
                do {
                    let result = try writing {
                        try CopyRenderer(path: input, analysis: analysis, grid: grid, reporter: reporter).render(aligned.ranges, to: partial)
                    }
                    return (result, decision, aligned.segments, aligned.moves, nil, frames)
                } catch let mismatch as CopyRenderer.IndexMismatch {
                    decision = RenderDecision(mode: .encode, reason: "the stream could not be copied (\(mismatch.detail))")
                }
            case .failure(let unaligned):
                decision = RenderDecision(mode: .encode, reason: unaligned.reason)
            }
        }
        var chosen = (segments: segments, moves: [EdgeMove]())
        if analysis.packets.isComplete,
            let keys = KeyframeGrid(
                index: analysis.packets, origin: analysis.origin, frameInterval: analysis.info.nominalFrameInterval,
                starts: .keyframes),
            keys.longestGOP <= RenderDecision.longestCopyableGOP, case .success(let aligned) = align(to: keys)
        {
            chosen = (aligned.segments, aligned.moves)
        }
        // Planning the crop reads the segments' pictures before the render reads them again: it
        // gets its part of the stage's progress, so the progress moves while it runs.
        let crop = try reframer.map { reframer in
            try reporter.within(0...Reframer.progressShare) { try reframer.plan(chosen.segments, reporter: reporter) }
        }
        guard !chosen.segments.isEmpty else {
            throw MomentsError(.internalError, "The highlight could not be made: no part of the video was chosen.")
        }
        let result = try reporter.within(crop == nil ? 0...1 : Reframer.progressShare...1) {
            try writing {
                try Renderer(
                    path: input, analysis: analysis, quality: settings.quality, lean: settings.limits.decodesLean(analysis.info),
                    crop: crop, frames: frames, reporter: reporter
                ).render(chosen.segments, to: partial)
            }
        }
        return (result, decision, chosen.segments, chosen.moves, crop, frames)
    }
}

extension HighlightEngine {
    /// Makes the poster and the thumbnail strip of `segments`, in memory (`MadeStills.save` writes
    /// them with the highlight). Stills the source will not give (a picture that does not decode)
    /// leave the highlight without them (nil) rather than failing it; cancellation still stops it.
    static func stills(
        of analysis: Analysis, _ segments: [Segment], input: String, settings: HighlightSettings, crop: CropPlan?,
        reporter: ProgressReporter
    ) throws -> MadeStills? {
        let made: Stills.Result
        do {
            made = try Stills(
                path: input, analysis: analysis, geometry: OutputGeometry(info: analysis.info, quality: settings.quality, crop: crop),
                crop: crop, cancellation: reporter.cancellation
            ).make(segments)
        } catch let error as MomentsError {
            throw error
        } catch {
            return nil
        }
        return MadeStills(
            made: made,
            report: .init(
                posterTime: made.posterTime, posterWidth: made.posterSize.width,
                posterHeight: made.posterSize.height, thumbnailTimes: made.thumbnailTimes))
    }

    /// The poster and thumbnail strip made in memory, saved with the highlight once nothing can cancel it.
    struct MadeStills {
        var made: Stills.Result
        var report: HighlightReport.Stills

        func save(to paths: StillPaths) throws(MomentsError) {
            do {
                if let path = paths.poster { try made.poster.write(to: URL(fileURLWithPath: path), options: .atomic) }
                if let path = paths.thumbnails { try made.strip.write(to: URL(fileURLWithPath: path), options: .atomic) }
            } catch {
                throw MomentsError(.ioError, "The highlight's poster or thumbnails could not be saved (\(error.localizedDescription)).")
            }
        }
    }
}

#if os(Linux)
    /// glibc's `malloc_trim` (in <malloc.h>, which the Glibc module does not export).
    @_silgen_name("malloc_trim")
    private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
