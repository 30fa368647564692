import API
import ArgumentParser
import Foundation
import Highlights
import JobStore
import MomentsContract
import MomentsModel
import Storage

/// `moments music`: music tracks for highlights.
struct MusicCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "music",
        abstract: "Music tracks for highlights.",
        subcommands: [Analyze.self, Add.self, List.self, Remove.self])

    struct Analyze: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "analyze",
            abstract: "Analyses a music track (10 s to 10 min): its tempo, beats, bars, strong onsets and loud sections.")

        @Argument(help: "The track (MP3, M4A, WAV, FLAC, Ogg).") var input: String
        @Flag(help: "Print the analysis as JSON.") var json = false

        func run() throws {
            let analysis = try runReportingErrors { try MusicAnalyzer.analyse(path: input) }
            if json {
                print(String(decoding: try ReportJSON.encoder.encode(analysis), as: UTF8.self))
                return
            }
            print(String(format: "%@: %.1f s", input, analysis.duration))
            if let tempo = analysis.tempo {
                print(
                    String(
                        format: "beat: %.1f a minute (strength %.2f), %d beats, %d bars, first beat at %.3f s",
                        tempo, analysis.beatStrength ?? 0, analysis.beats.count, analysis.downbeats.count, analysis.beats.first ?? 0))
            } else {
                print("beat: none steady; \(analysis.onsets.count) strong onsets to cut on")
            }
            let sections = analysis.loudSections.map { String(format: "%.0f–%.0f s", $0.start, $0.end) }
            print("loud sections: \(sections.isEmpty ? "none" : sections.joined(separator: ", "))")
        }
    }

    /// `moments music add`: a track into the operator's library (object storage and the database).
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Adds a track to the music library the app's picker lists (GET /api/v1/music); prints its id.")

        @Argument(help: "The track (MP3, M4A, WAV, FLAC, Ogg, AIFF; 10 s to 10 min).") var input: String
        @Option(help: "Its title, as the app shows it.") var title: String
        @Option(help: "Who made it.") var artist: String?
        @Option(help: "The terms it may be used under (shown to operators; a deployer must meet them).") var license: String?

        func validate() throws {
            guard (1...200).contains(title.trimmingCharacters(in: .whitespaces).count) else {
                throw ValidationError("--title must be 1 to 200 characters.")
            }
            if let artist, artist.count > 200 { throw ValidationError("--artist must be at most 200 characters.") }
            if let license, license.count > 2000 { throw ValidationError("--license must be at most 2000 characters.") }
        }

        func run() async throws {
            try await reportingErrors {
                // Checked and analysed before anything is stored: a file that is no track leaves nothing behind.
                let analysis = try MusicAnalyzer.analyse(path: input)
                let environment = try await SettingsSources.load()
                let storage = try StorageConfiguration.store(environment: environment)
                let services = try await Services.fromEnvironment(label: "moments.music", environment: environment)
                let id = UUID()
                let key = ObjectKey.libraryTrack(id, filename: input)
                let json = FileManager.default.temporaryDirectory.appendingPathComponent("moments-music-\(id.uuidString).json")
                defer { try? FileManager.default.removeItem(at: json) }
                try ReportJSON.encoder.encode(analysis).write(to: json)
                let track = MusicTrack(
                    id: id, title: title.trimmingCharacters(in: .whitespaces), artist: artist, license: license,
                    objectKey: key, duration: analysis.duration, tempo: analysis.tempo)
                try await services.run { services in
                    _ = try await services.store.migrate()
                    _ = try await storage.put(key: key, from: URL(fileURLWithPath: input), contentType: "application/octet-stream")
                    _ = try await storage.put(key: ObjectKey.libraryAnalysis(id), from: json, contentType: "application/json")
                    do {
                        try await services.store.addTrack(track)
                    } catch {
                        try? await storage.delete(key: key)
                        try? await storage.delete(key: ObjectKey.libraryAnalysis(id))
                        throw error
                    }
                }
                print(id.uuidString.lowercased())
                FileHandle.standardError.write(
                    Data(
                        String(
                            format: "added %@: %.1f s, %@\n", track.title, analysis.duration,
                            analysis.tempo.map { String(format: "%.1f beats a minute", $0) } ?? "no steady beat"
                        ).utf8))
            }
        }
    }

    /// `moments music list`: the library.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Lists the music library.")

        @Flag(help: "Print the list as JSON (as GET /api/v1/music answers).") var json = false

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.music")
                let tracks = try await services.run { services in try await services.store.tracks() }
                if json {
                    print(String(decoding: try MomentsJSON.encoder.encode(MusicLibraryList(tracks)), as: UTF8.self))
                    return
                }
                if tracks.isEmpty { print("the music library is empty (moments music add FILE --title T)") }
                for t in tracks {
                    print(
                        String(
                            format: "%@  %6.1f s  %@  %@%@", t.id.uuidString.lowercased(), t.duration,
                            t.tempo.map { String(format: "%5.1f bpm", $0) } ?? "no beat  ", t.title, t.artist.map { " — \($0)" } ?? ""))
                }
            }
        }
    }

    /// `moments music remove`: a track out of the library.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Removes a track from the music library; jobs that asked for it and have not run fail with music_unavailable.")

        @Argument(help: "The track's id.") var id: String

        func run() async throws {
            try await reportingErrors {
                guard let uuid = UUID(uuidString: id) else { throw JobStoreError(.notFound, "'\(id)' is not a track id (a UUID).") }
                let environment = try await SettingsSources.load()
                let storage = try StorageConfiguration.store(environment: environment)
                let services = try await Services.fromEnvironment(label: "moments.music", environment: environment)
                let removed = try await services.run { services in try await services.store.removeTrack(uuid) }
                guard let removed else { throw JobStoreError(.notFound, "No track \(id) is in the music library.") }
                try await storage.delete(key: removed.objectKey)
                try await storage.delete(key: ObjectKey.libraryAnalysis(uuid))
                print("removed \(removed.title)")
            }
        }
    }
}
