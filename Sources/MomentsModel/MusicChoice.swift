import Foundation

/// A soundtrack asked for a highlight: a track of the operator's music library, and how it sits
/// with the video's own sound. Stored with the job and sent by clients.
public struct MusicChoice: Sendable, Equatable, Codable {
    /// The music's loudness against the video's sound a client may ask for, in dB.
    public static let volumes = -30.0...12.0
    /// Under the video's sound by 6 dB unless asked otherwise.
    public static let defaultVolume = -6.0

    /// The library track (`GET /api/v1/music`).
    public var trackID: UUID
    /// The music's loudness against the video's own sound, in dB (`volumes`).
    public var volume: Double
    /// False: the music alone, the video's sound left out.
    public var keepSourceAudio: Bool

    public init(trackID: UUID, volume: Double = MusicChoice.defaultVolume, keepSourceAudio: Bool = true) {
        self.trackID = trackID
        self.volume = volume
        self.keepSourceAudio = keepSourceAudio
    }

    enum CodingKeys: String, CodingKey {
        case trackID = "music_id", volume = "music_volume", keepSourceAudio = "keep_source_audio"
    }
}
