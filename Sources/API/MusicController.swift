import Foundation
import Hummingbird
import JobStore
import MomentsContract
import MomentsModel

extension MusicLibraryList: ResponseEncodable {}

/// `GET /api/v1/music`: the music library (`moments music add`), for the app's picker.
struct MusicController: Sendable {
    let store: JobStore

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.get("music") { _, _ in MusicLibraryList(try await store.tracks()) }
    }
}

extension MusicLibraryList {
    /// The library's tracks as the API lists them.
    public init(_ tracks: [MusicTrack]) {
        self.init(tracks: tracks.map { Track(id: $0.id, title: $0.title, artist: $0.artist, duration: $0.duration, tempo: $0.tempo,
                                             license: $0.license) })
    }
}

extension MusicController {
    /// The soundtrack an upload asks for (`music_id`, `music_volume`, `keep_source_audio`): nil
    /// without `music_id`; a track of the library, a volume in range and a boolean, each refused
    /// with 422 and a code naming the field.
    static func choice(id: String?, volume: String?, keepSourceAudio: String?, store: JobStore) async throws -> MusicChoice? {
        func given(_ text: String?) -> String? { text.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 } }
        guard let text = given(id) else {
            if given(volume) != nil || given(keepSourceAudio) != nil {
                throw APIError(.unprocessableContent, "invalid_music_id", "music_volume and keep_source_audio need a music_id (GET /api/v1/music lists the tracks).")
            }
            return nil
        }
        guard let trackID = UUID(uuidString: text), let track = try await store.track(trackID), track.removedAt == nil else {
            throw APIError(.unprocessableContent, "invalid_music_id", "music_id must name a track of the music library (GET /api/v1/music lists them).")
        }
        var choice = MusicChoice(trackID: track.id)
        if let text = given(volume) {
            guard let value = Double(text), value.isFinite, MusicChoice.volumes.contains(value) else {
                throw APIError(.unprocessableContent, "invalid_music_volume",
                               "music_volume must be a number of dB from \(Int(MusicChoice.volumes.lowerBound)) to \(Int(MusicChoice.volumes.upperBound)) (-6: the music 6 dB under the video's sound).")
            }
            choice.volume = value
        }
        if let text = given(keepSourceAudio) {
            switch text.lowercased() {
            case "true", "1", "yes": choice.keepSourceAudio = true
            case "false", "0", "no": choice.keepSourceAudio = false
            default: throw APIError(.unprocessableContent, "invalid_keep_source_audio", "keep_source_audio must be true or false.")
            }
        }
        return choice
    }
}
