import Foundation

/// `GET /api/v1/music`: the operator's music library, for the app's picker, by title.
public struct MusicLibraryList: Codable, Equatable, Sendable {
    public struct Track: Codable, Equatable, Sendable {
        /// What `music_id` names on an upload.
        public var id: UUID
        public var title: String
        public var artist: String?
        /// Seconds.
        public var duration: Double
        /// Beats a minute; null where the track has no steady beat (its cuts go on strong onsets).
        public var tempo: Double?
        /// The terms it may be used under, as the operator gave them.
        public var license: String?

        public init(id: UUID, title: String, artist: String?, duration: Double, tempo: Double?, license: String?) {
            self.id = id
            self.title = title
            self.artist = artist
            self.duration = duration
            self.tempo = tempo
            self.license = license
        }

        enum CodingKeys: String, CodingKey { case id, title, artist, duration, tempo, license }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id.uuidString.lowercased(), forKey: .id)
            try c.encode(title, forKey: .title)
            try c.encode(artist, forKey: .artist)
            try c.encode(duration, forKey: .duration)
            try c.encode(tempo, forKey: .tempo)
            try c.encode(license, forKey: .license)
        }
    }

    public var tracks: [Track]

    public init(tracks: [Track]) { self.tracks = tracks }
}
