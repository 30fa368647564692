import Foundation

/// Every key Moments writes in object storage, spelt here only: the API, the worker, the retention
/// sweep and `moments music` name their objects through it.
///
/// - `sources/<job>.<ext>`: a video uploaded in a form; `sources/<job>-direct`: one copied from its
///   staging key when a direct upload starts.
/// - `uploads/<job>` and `uploads/<job>-music`: where a direct upload's PUTs land (a resumable one's
///   parts too), until the start copies them.
/// - `results/<job>-<attempt>.mp4`, `results/<job>-<attempt>-poster.jpg` and `-thumbnails.jpg`: an
///   attempt's outputs, one key per attempt so a fenced-out attempt overwrites nothing.
/// - `music-uploads/<job>/music.<ext>`: a track the app uploaded with the video.
/// - `music/<track>/track.<ext>` and `music/<track>/analysis.json`: the operator's music library.
extension ObjectKey {
    /// The folders, each holding objects of one kind.
    public enum Folder: String, CaseIterable, Sendable {
        case sources = "sources/", uploads = "uploads/", results = "results/", musicUploads = "music-uploads/", music = "music/"
    }

    /// A video uploaded in a form, keeping its file name's extension.
    public static func source(of job: UUID, filename: String) -> String { Folder.sources.rawValue + name(job) + suffix(filename) }

    /// A direct upload's video, copied from `staged(job)` when it starts.
    public static func directSource(of job: UUID) -> String { Folder.sources.rawValue + name(job) + "-direct" }

    /// Where a direct upload's video is PUT.
    public static func staged(_ job: UUID) -> String { Folder.uploads.rawValue + name(job) }

    /// Where a direct upload's track of the app's own is PUT.
    public static func stagedMusic(_ job: UUID) -> String { Folder.uploads.rawValue + name(job) + "-music" }

    /// An attempt's highlight.
    public static func result(of job: UUID, attempt: Int) -> String { Folder.results.rawValue + "\(name(job))-\(attempt).mp4" }

    /// An attempt's poster or strip of thumbnails.
    public static func still(of job: UUID, attempt: Int, _ kind: Still) -> String {
        Folder.results.rawValue + "\(name(job))-\(attempt)-\(kind.rawValue).jpg"
    }

    public enum Still: String, Sendable { case poster, thumbnails }

    /// A track the app uploaded with the video.
    public static func uploadedMusic(of job: UUID, filename: String) -> String {
        Folder.musicUploads.rawValue + name(job) + "/music" + suffix(filename)
    }

    /// A track of the music library; `libraryTrackPrefix` finds it whatever its extension.
    public static func libraryTrack(_ track: UUID, filename: String) -> String { libraryTrackPrefix(track) + suffix(filename) }

    public static func libraryTrackPrefix(_ track: UUID) -> String { Folder.music.rawValue + name(track) + "/track" }

    /// A library track's analysis (`MusicAnalysis` as JSON), beside it.
    public static func libraryAnalysis(_ track: UUID) -> String { Folder.music.rawValue + name(track) + "/analysis.json" }

    /// The job a key of `sources/`, `uploads/`, `results/` or `music-uploads/` belongs to: the id
    /// its name starts with. Keys that name none are not ours.
    public static func job(in key: String) -> UUID? {
        guard let slash = key.firstIndex(of: "/") else { return nil }
        let rest = key[key.index(after: slash)...]
        return rest.count >= 36 ? UUID(uuidString: String(rest.prefix(36))) : nil
    }

    private static func name(_ id: UUID) -> String { id.uuidString.lowercased() }

    /// `.ext` for a file name's extension of one to five letters and digits, lowercased; nothing otherwise.
    private static func suffix(_ filename: String) -> String {
        let ext = (filename as NSString).pathExtension.lowercased()
        guard !ext.isEmpty, ext.count <= 5, ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return "." + ext
    }
}
