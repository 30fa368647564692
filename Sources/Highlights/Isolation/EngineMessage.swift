import Foundation
import Media
import MomentsModel

/// One highlight asked of an engine process (`moments engine`, which a worker starts for each
/// attempt): one JSON line on the process's standard input, which the worker then keeps open for
/// as long as it lives.
public struct EngineRequest: Codable, Sendable, Equatable {
    public var input: String
    public var output: String
    public var poster: String?
    public var thumbnails: String?
    public var targetDuration: Double
    public var quality: Quality
    public var codec: VideoCodecChoice
    public var choices: HighlightChoices
    public var maximumSourceDuration: Double
    /// Bytes of address space the process may map beyond what it has when it starts; nil: no limit.
    public var memoryLimit: Int?
    /// The soundtrack (its file already fetched), when the job asked for one.
    public var music: MusicSettings?

    public init(input: String, output: String, poster: String?, thumbnails: String?, settings: HighlightSettings, memoryLimit: Int?) {
        self.input = input
        self.output = output
        self.poster = poster
        self.thumbnails = thumbnails
        targetDuration = settings.duration
        quality = settings.quality
        codec = settings.codec
        choices = settings.choices
        maximumSourceDuration = settings.limits.maximumDuration
        self.memoryLimit = memoryLimit
        music = settings.music
    }

    public var settings: HighlightSettings {
        var settings = HighlightSettings(
            duration: targetDuration, quality: quality, codec: codec,
            limits: MediaLimits(maximumDuration: maximumSourceDuration), choices: choices)
        settings.stills = poster == nil && thumbnails == nil ? nil : StillPaths(poster: poster, thumbnails: thumbnails)
        settings.music = music
        return settings
    }
}

/// What an engine process tells its worker: one JSON line each on its standard output. The last
/// line is `finished` or `failed`; a process that ends without one died.
public enum EngineMessage: Codable, Sendable {
    /// A failure counts as running out of memory once the process has used this share of what the
    /// limit allowed it beyond its start: libraries report a failed allocation as anything (x264's
    /// encoder that cannot open is "a generic error in an external library").
    public static let nearLimitShare = 0.75

    /// The request is read and the work begins (the first line, at once).
    case started
    /// The memory limit is set: the process had `start` bytes of address space mapped and may map
    /// up to `limit`.
    case limited(start: Int, limit: Int)
    /// The source's length, as soon as it is probed: the worker's deadline follows from it.
    case probed(duration: Double)
    case progress(update: ProgressUpdate)
    case finished(report: HighlightReport)
    case failed(code: ErrorCode, message: String)
}
