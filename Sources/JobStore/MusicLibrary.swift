import Foundation
import PostgresNIO

/// A track of the operator's music library (`music_tracks`).
public struct MusicTrack: Sendable, Equatable {
    public var id: UUID
    public var title: String
    public var artist: String?
    public var license: String?
    /// The track in object storage (`music/<id>/track.<ext>`); its analysis is beside it.
    public var objectKey: String
    public var duration: Double
    /// Beats a minute; nil without a steady beat.
    public var tempo: Double?
    public var createdAt: Date
    /// When it was removed from the library (kept for the jobs that name it).
    public var removedAt: Date?

    public init(
        id: UUID = UUID(), title: String, artist: String? = nil, license: String? = nil, objectKey: String, duration: Double,
        tempo: Double?, createdAt: Date = Date(), removedAt: Date? = nil
    ) {
        self.id = id
        self.title = title
        self.artist = artist
        self.license = license
        self.objectKey = objectKey
        self.duration = duration
        self.tempo = tempo
        self.createdAt = createdAt
        self.removedAt = removedAt
    }
}

extension JobStore {
    static let trackColumns = "id, title, artist, license, object_key, duration, tempo, created_at, removed_at"

    static func track(_ row: PostgresRow) throws -> MusicTrack {
        let (id, title, artist, license, key, duration, tempo, created, removed) =
            try row.decode((UUID, String, String?, String?, String, Double, Double?, Date, Date?).self)
        return MusicTrack(
            id: id, title: title, artist: artist, license: license, objectKey: key, duration: duration, tempo: tempo,
            createdAt: created, removedAt: removed)
    }

    /// Adds `track` to the library.
    public func addTrack(_ track: MusicTrack) async throws(JobStoreError) {
        try await database("add the track") { connection, logger in
            try await connection.query(
                """
                INSERT INTO music_tracks (id, title, artist, license, object_key, duration, tempo)
                VALUES (\(track.id), \(track.title), \(track.artist), \(track.license), \(track.objectKey), \(track.duration), \(track.tempo))
                """, logger: logger)
        }
    }

    /// The library's tracks (not removed), by title.
    public func tracks() async throws(JobStoreError) -> [MusicTrack] {
        try await database("list the music") { connection, logger in
            var tracks: [MusicTrack] = []
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.trackColumns) FROM music_tracks WHERE removed_at IS NULL ORDER BY title, id", logger: logger)
            for try await row in rows { tracks.append(try Self.track(row)) }
            return tracks
        }
    }

    /// One track, removed or not; nil when there is none with this id.
    public func track(_ id: UUID) async throws(JobStoreError) -> MusicTrack? {
        try await database("read the track") { connection, logger in
            let rows = try await connection.query("SELECT \(unescaped: Self.trackColumns) FROM music_tracks WHERE id = \(id)", logger: logger)
            for try await row in rows { return try Self.track(row) }
            return nil
        }
    }

    /// Marks a track removed; returns it as it was, or nil when there is no such track in the library.
    public func removeTrack(_ id: UUID) async throws(JobStoreError) -> MusicTrack? {
        try await database("remove the track") { connection, logger in
            let rows = try await connection.query(
                """
                UPDATE music_tracks SET removed_at = now() WHERE id = \(id) AND removed_at IS NULL
                RETURNING \(unescaped: Self.trackColumns)
                """, logger: logger)
            for try await row in rows { return try Self.track(row) }
            return nil
        }
    }
}
