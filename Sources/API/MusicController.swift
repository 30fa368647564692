import Foundation
import Highlights
import Hummingbird
import JobStore
import MomentsContract
import MomentsModel
import MomentsSupport

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
        self.init(
            tracks: tracks.map {
                Track(
                    id: $0.id, title: $0.title, artist: $0.artist, duration: $0.duration, tempo: $0.tempo,
                    license: $0.license)
            })
    }
}

extension MusicController {
    /// The soundtrack an upload asks for (`music_id`, or a `music` part named `uploaded`;
    /// `music_volume`, `keep_source_audio`): nil without either; a track of the library (or the
    /// uploaded one, not both), a volume in range and a boolean, each refused with 422 and a code
    /// naming the field.
    static func choice(
        id: String?, volume: String?, keepSourceAudio: String?, store: JobStore,
        uploaded: String? = nil
    ) async throws -> MusicChoice? {
        func given(_ text: String?) -> String? { text.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 } }
        var choice: MusicChoice
        if let text = given(id) {
            guard uploaded == nil else {
                throw APIError(
                    .unprocessableContent, .invalidMusicId,
                    "Send a music_id or a track of your own (a music part, or music_filename on a direct upload), not both.")
            }
            guard let trackID = UUID(uuidString: text), let track = try await store.track(trackID), track.removedAt == nil else {
                throw APIError(
                    .unprocessableContent, .invalidMusicId, "music_id must name a track of the music library (GET /api/v1/music lists them).")
            }
            choice = MusicChoice(trackID: track.id)
        } else if let uploaded {
            choice = MusicChoice(uploaded: uploaded)
        } else {
            if given(volume) != nil || given(keepSourceAudio) != nil {
                throw APIError(
                    .unprocessableContent, .invalidMusicId,
                    "music_volume and keep_source_audio need a music_id (GET /api/v1/music lists the tracks) or a music part.")
            }
            return nil
        }
        if let text = given(volume) {
            guard let value = Double(text), value.isFinite, MusicChoice.volumes.contains(value) else {
                throw APIError(
                    .unprocessableContent, .invalidMusicVolume,
                    "music_volume must be a number of dB from \(Int(MusicChoice.volumes.lowerBound)) to \(Int(MusicChoice.volumes.upperBound)) (-6: the music 6 dB under the video's sound)."
                )
            }
            choice.volume = value
        }
        if let text = given(keepSourceAudio) {
            switch text.lowercased() {
            case "true", "1", "yes": choice.keepSourceAudio = true
            case "false", "0", "no": choice.keepSourceAudio = false
            default: throw APIError(.unprocessableContent, .invalidKeepSourceAudio, "keep_source_audio must be true or false.")
            }
        }
        return choice
    }

    /// The longest track an upload may carry, in a form or PUT beside the video.
    static let largestTrack = FormLimits().musicBytes

    /// 413 `music_too_large`.
    static func tooLarge(_ limit: Int64) -> APIError {
        APIError(.contentTooLarge, .musicTooLarge, "The music track is larger than \(limit / (1 << 20)) MiB, the most we accept for a track.")
    }

    /// Checks an uploaded `music` part is a track we can use (sound alone, 10 s to 10 min as its
    /// container says), on a blocking-work thread; 415 with the code (`not_audio`, …) otherwise.
    static func probe(_ file: URL, bytes: Int64) async throws {
        guard bytes > 0 else { throw APIError(.badRequest, .missingFile, "The 'music' part is empty.") }
        do {
            try await BlockingWork.run { () throws(MomentsError) in try MusicAnalyzer.probe(path: file.path) }
        } catch {
            throw APIError(error.code == .ioError ? .internalServerError : .unsupportedMediaType, APIErrorCode(error.code), error.message)
        }
    }
}
