import Foundation
import MomentsModel

/// What the music did to a highlight, for the report.
public struct MusicReport: Sendable, Codable, Equatable {
    public var title: String?
    /// Track seconds the highlight starts at (a downbeat where the track has a beat).
    public var trackStart: Double
    /// Track seconds after which it repeats from `trackStart` (the track is shorter than the highlight).
    public var loopEnd: Double?
    public var tempo: Double?
    /// `beat`: cuts on the beat; `onsets`: no steady beat, cuts on strong onsets; `free`: neither.
    public var cutsOn: String
    /// Every cut between segments and the highlight's end, in order.
    public var cuts: [BeatCut]
    /// The music's level against the source's sound asked for (dB), and whether that sound was kept.
    public var volume: Double
    public var keepSourceAudio: Bool
    /// Integrated loudness of the mix (LUFS) before AAC, and of the source's sound alone.
    public var loudness: Double?
    public var sourceLoudness: Double?
    /// Stretches where the music went down for speech.
    public var duckedForSpeech: Int

    enum CodingKeys: String, CodingKey {
        case title, tempo, cuts, volume, loudness
        case trackStart = "track_start", loopEnd = "loop_end", cutsOn = "cuts_on", keepSourceAudio = "keep_source_audio"
        case sourceLoudness = "source_loudness", duckedForSpeech = "ducked_for_speech"
    }
}

extension HighlightEngine {
    /// Renders `segments` under `music`: their cuts moved onto its beat (`BeatFit`), the picture
    /// encoded (so every edge is where the beat says, not on a keyframe), the track mixed under
    /// the sound.
    static func renderWithMusic(
        _ music: MusicSettings, _ analysis: Analysis, _ segments: [Segment], pauses: SpeechPauses, input: String,
        to partial: String, settings: HighlightSettings, reporter: ProgressReporter
    ) throws
        -> (result: Renderer.Result, decision: RenderDecision, segments: [Segment], crop: CropPlan?, frames: FrameRatePlan, music: MusicReport)
    {
        let natural = segments.reduce(0) { $0 + $1.duration }
        guard let track = music.analysis else { throw MomentsError(.internalError, "The music track was not analysed.") }
        let plan = MusicPlan(track, length: max(settings.duration, natural) + 1)
        let fitted = BeatFit.fit(
            segments, plan: plan, target: settings.duration,
            bounds: BeatFit.bounds(segments, shots: analysis.shots, duration: analysis.info.duration),
            shortest: min(settings.rules.shortest, 1), pictures: analysis.frameTimes, allows: { pauses.keepsWhole($0) })
        guard !fitted.segments.isEmpty else {
            throw MomentsError(.internalError, "The highlight could not be made: no part of the video was chosen.")
        }
        let frames = FrameRatePlan(analysis: analysis, choice: settings.frameRate)
        let decision = RenderDecision(
            mode: .encode,
            reason: plan.mode == .free
                ? "music is mixed under the sound, so the video is encoded"
                : "the cuts fall on the music's \(plan.mode == .beat ? "beat" : "onsets"), between keyframes, so the video is encoded")
        let reframer = try Reframer(path: input, analysis: analysis, aspect: settings.choices.aspect, cancellation: reporter.cancellation)
        let crop = try reframer.map { reframer in
            try reporter.within(0...Reframer.progressShare) { try reframer.plan(fitted.segments, reporter: reporter) }
        }
        let length = fitted.segments.reduce(0) { $0 + $1.duration }
        let bed = try MusicBed(settings: music, plan: plan, seconds: length + 0.1)
        // Speech to duck the music under: none when the source's sound is left out.
        let speech = music.keepSourceAudio ? speechOnOutput(fitted.segments, speech: analysis.speech) : []
        let mix = MusicMix(settings: music, bed: bed, speech: speech)
        let result = try reporter.within(crop == nil ? 0...1 : Reframer.progressShare...1) {
            try writing {
                try Renderer(
                    path: input, analysis: analysis, quality: settings.quality, lean: settings.limits.decodesLean(analysis.info),
                    crop: crop, frames: frames, music: mix, reporter: reporter
                ).render(fitted.segments, to: partial)
            }
        }
        let report = MusicReport(
            title: music.title, trackStart: plan.start, loopEnd: plan.loopEnd, tempo: track.tempo,
            cutsOn: plan.mode.rawValue, cuts: fitted.cuts, volume: music.volume,
            keepSourceAudio: music.keepSourceAudio, loudness: result.music?.loudness,
            sourceLoudness: result.music?.sourceLoudness,
            duckedForSpeech: speech.count)
        return (result, decision, fitted.segments, crop, frames, report)
    }

    /// Where the source's speech plays in the highlight, in highlight seconds.
    static func speechOnOutput(_ segments: [Segment], speech: [SpeechSpan]) -> [SpeechSpan] {
        var spans: [SpeechSpan] = []
        var elapsed = 0.0
        for segment in segments {
            for span in speech where span.end > segment.start && span.start < segment.end {
                spans.append(
                    SpeechSpan(
                        start: elapsed + max(span.start, segment.start) - segment.start,
                        end: elapsed + min(span.end, segment.end) - segment.start))
            }
            elapsed += segment.duration
        }
        return spans
    }
}
