import Foundation

/// A soundtrack asked for a highlight: a track of the operator's music library or one the app
/// uploaded with the video, and how it sits with the video's own sound. Stored with the job.
public struct MusicChoice: Sendable, Equatable, Codable {
    /// The music's loudness against the video's sound a client may ask for, in dB.
    public static let volumes = -30.0...12.0
    /// Under the video's sound by 6 dB unless asked otherwise.
    public static let defaultVolume = -6.0

    /// The library track (`GET /api/v1/music`); nil for a track uploaded with the video.
    public var trackID: UUID?
    /// A track uploaded with the video (the upload's `music` part): its name as sent, cleaned.
    public var filename: String?
    /// Where that uploaded track is stored.
    public var uploadedKey: String?
    /// The music's loudness against the video's own sound, in dB (`volumes`).
    public var volume: Double
    /// False: the music alone, the video's sound left out.
    public var keepSourceAudio: Bool

    public init(trackID: UUID?, volume: Double = MusicChoice.defaultVolume, keepSourceAudio: Bool = true) {
        self.trackID = trackID
        self.volume = volume
        self.keepSourceAudio = keepSourceAudio
    }

    /// A track uploaded with the video, stored at `uploadedKey` (nil until it is stored).
    public init(
        uploaded filename: String, at uploadedKey: String? = nil, volume: Double = MusicChoice.defaultVolume,
        keepSourceAudio: Bool = true
    ) {
        self.filename = filename
        self.uploadedKey = uploadedKey
        self.volume = volume
        self.keepSourceAudio = keepSourceAudio
    }

    enum CodingKeys: String, CodingKey {
        case trackID = "music_id", filename = "music_filename", uploadedKey = "music_key", volume = "music_volume"
        case keepSourceAudio = "keep_source_audio"
    }
}
