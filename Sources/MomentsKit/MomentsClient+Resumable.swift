import Foundation
import MomentsContract
import MomentsModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How the parts of a resumable upload travel.
public enum PartTransport: Sendable, Equatable {
    /// In this process, while it runs.
    case foreground
    /// By the system on a background `URLSession` with this identifier (iOS): parts keep going while
    /// the app is suspended. Pass the identifier the app delegate gets to
    /// `MomentsClient.handleBackgroundEvents(identifier:completion:)`.
    case background(identifier: String)
}

/// Where a resumable upload keeps its state between launches, and how its parts travel.
public struct ResumableUploadOptions: Sendable {
    /// A folder of the app's own (Application Support): one small JSON file per upload, and the
    /// part being sent.
    public var stateDirectory: URL
    public var transport: PartTransport
    /// Stop (with `suspended`) after sending this many parts in this call, as an app being
    /// suspended would; the next call resumes. Nil: send them all.
    public var stopAfterParts: Int?

    public init(stateDirectory: URL, transport: PartTransport = .foreground, stopAfterParts: Int? = nil) {
        self.stateDirectory = stateDirectory
        self.transport = transport
        self.stopAfterParts = stopAfterParts
    }
}

/// What a resumable upload remembers between launches: which file, under which idempotency key,
/// as which job. Which parts arrived is the server's to say (`GET /api/v1/uploads/{id}/parts`), so
/// parts the system finished while the app was not running are never sent twice.
public struct ResumableUploadState: Codable, Sendable, Equatable {
    public var filePath: String
    public var fileSize: Int64
    public var fileModified: Date
    public var idempotencyKey: String
    public var jobID: UUID?
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case filePath = "file_path", fileSize = "file_size", fileModified = "file_modified"
        case idempotencyKey = "idempotency_key", jobID = "job_id", createdAt = "created_at"
    }
}

extension MomentsClient {
    /// Uploads `file` as a resumable upload (API 1.1): the server divides it into parts, each sent
    /// with its own signed URL; after the network drops, the app is suspended, or it is relaunched,
    /// calling this again with the same file and `options.stateDirectory` sends only the parts the
    /// server does not have, then starts the job. The submission carries an idempotency key kept
    /// with the state, so a retried or resumed reservation is the same job. Needs S3-compatible
    /// storage on the server (`direct_upload_unavailable` otherwise).
    ///
    /// Throws `suspended` (kind `cancelled`) when `options.stopAfterParts` is reached.
    ///
    /// `music` and `musicFile` (API 1.2) as for `upload`: a track of the app's own goes in one PUT
    /// to a URL of its own once the video's parts are sent (again after a relaunch if it had not
    /// arrived). `metadata` (API 1.2) as for `upload`.
    public func resumableUpload(
        file: URL, targetDuration: Int = HighlightLimits.defaultTargetDuration, quality: Quality = .high,
        codec: VideoCodecChoice = .auto, callbackURL: String? = nil,
        choices: HighlightChoices = HighlightChoices(), music: MusicChoice? = nil, musicFile: URL? = nil,
        metadata: [String: String]? = nil, options: ResumableUploadOptions,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(MomentsClientError) -> UploadAccepted {
        let identity = try Self.identity(of: file)
        let music = try Self.musicChoice(music, file: musicFile)
        let metadata = try Self.checked(metadata)
        let musicSize = try musicFile.map { file throws(MomentsClientError) in try Self.size(of: file) }
        var track: (file: URL, size: Int64)? = nil
        if let musicFile, let musicSize { track = (musicFile, musicSize) }
        let stateFile = Self.stateFile(for: file, in: options.stateDirectory)
        var state = Self.loadState(stateFile)
        if let existing = state, existing.fileSize != identity.size || existing.fileModified != identity.modified {
            state = nil  // the file changed since: a new upload
        }
        var current =
            state
            ?? ResumableUploadState(
                filePath: file.path, fileSize: identity.size, fileModified: identity.modified,
                idempotencyKey: UUID().uuidString, jobID: nil, createdAt: Date())
        try Self.save(current, to: stateFile)

        var parts: UploadParts
        if let job = current.jobID {
            do {
                parts = try await send("GET", "api/v1/uploads/\(job.uuidString.lowercased())/parts")
            } catch  where error.code == "already_started" {
                Self.forget(stateFile, partsOf: file, in: options.stateDirectory)
                return UploadAccepted(jobID: job, estimatedTime: nil)
            } catch  where error.code == "job_not_found" {
                // Expired (a day without a start): begin again under a new key.
                current = ResumableUploadState(
                    filePath: file.path, fileSize: identity.size, fileModified: identity.modified,
                    idempotencyKey: UUID().uuidString, jobID: nil, createdAt: Date())
                try Self.save(current, to: stateFile)
                parts = try await reserveResumable(
                    file: file, size: identity.size, targetDuration: targetDuration, quality: quality,
                    codec: codec, callbackURL: callbackURL, choices: choices, music: music,
                    musicSize: musicSize, metadata: metadata, state: &current, stateFile: stateFile)
            }
        } else {
            parts = try await reserveResumable(
                file: file, size: identity.size, targetDuration: targetDuration, quality: quality,
                codec: codec, callbackURL: callbackURL, choices: choices, music: music,
                musicSize: musicSize, metadata: metadata, state: &current, stateFile: stateFile)
        }
        guard let job = current.jobID else { throw MomentsClientError.invalid("The server gave the upload no job id.") }

        var sent = 0
        for _ in 0..<4 {
            var done = parts.parts.filter(\.received).reduce(Int64(0)) { $0 + $1.sizeBytes }
            progress?(TransferProgress(bytes: done, total: identity.size))
            for part in parts.missing {
                if let limit = options.stopAfterParts, sent >= limit {
                    throw MomentsClientError(
                        kind: .cancelled, code: "suspended",
                        message: "The upload stopped after \(sent) part\(sent == 1 ? "" : "s"); call again to resume it.")
                }
                guard let url = part.url.flatMap(URL.init(string:)) else { break }  // more than the URLs given: ask again
                let base = done
                try await sendPart(part, of: file, to: url, options: options) { bytes in
                    progress?(TransferProgress(bytes: base + bytes, total: identity.size))
                }
                done += part.sizeBytes
                sent += 1
            }
            // The track, while the server has not got it (it gives a URL only then).
            if let track, let address = parts.musicUploadURL {
                try await put(track.file, size: track.size, to: address, method: "PUT", progress: nil)
                parts.musicUploadURL = nil
            }
            do {
                let accepted: UploadAccepted = try await send("POST", "api/v1/jobs/\(job.uuidString.lowercased())/start", idempotent: true)
                Self.forget(stateFile, partsOf: file, in: options.stateDirectory)
                return accepted
            } catch  where error.code == "upload_incomplete" || error.code == "upload_size_mismatch" || error.code == "music_missing" {
                // Parts whose URLs expired or that storage did not keep: what is missing, with fresh URLs.
                parts = try await send("GET", "api/v1/uploads/\(job.uuidString.lowercased())/parts")
            }
        }
        throw MomentsClientError(
            kind: .server, status: 409, code: "upload_incomplete",
            message: "The upload's parts did not all arrive after several tries; try again later.")
    }

    /// `POST /api/v1/uploads` with `resumable`, under the state's idempotency key (retried safely).
    private func reserveResumable(
        file: URL, size: Int64, targetDuration: Int, quality: Quality, codec: VideoCodecChoice,
        callbackURL: String?, choices: HighlightChoices, music: MusicChoice?, musicSize: Int64?, metadata: [String: String]?,
        state: inout ResumableUploadState, stateFile: URL
    ) async throws(MomentsClientError) -> UploadParts {
        let request = DirectUploadRequest(
            filename: file.lastPathComponent, targetDuration: targetDuration, quality: quality.rawValue,
            callbackURL: callbackURL, codec: codec == .auto ? nil : codec.rawValue, sizeBytes: size,
            choices: choices, resumable: true, music: music, musicSizeBytes: musicSize, metadata: metadata)
        let reservation: DirectUpload = try await send(
            "POST", "api/v1/uploads", body: try encode(request),
            headers: ["Idempotency-Key": state.idempotencyKey], idempotent: true)
        guard var parts = reservation.resumable else {
            throw MomentsClientError.invalid("The server did not make the upload resumable (it answered without parts).")
        }
        parts.musicUploadURL = reservation.musicUploadURL
        state.jobID = reservation.jobID
        try Self.save(state, to: stateFile)
        return parts
    }

    /// PUTs one part (copied to a file of its own: background sessions upload from files, and a
    /// part's bytes must be the ones signed for). Retried on transient trouble.
    private func sendPart(
        _ part: UploadParts.Part, of file: URL, to url: URL, options: ResumableUploadOptions,
        sent: @escaping @Sendable (Int64) -> Void
    ) async throws(MomentsClientError) {
        let partFile = options.stateDirectory.appendingPathComponent("\(Self.fileKey(file))-part-\(part.partNumber)")
        try Self.copyRange(of: file, offset: part.offset, length: part.sizeBytes, to: partFile)
        defer { try? FileManager.default.removeItem(at: partFile) }
        var put = URLRequest(url: url)
        put.httpMethod = "PUT"
        put.setValue(String(part.sizeBytes), forHTTPHeaderField: "Content-Length")
        put.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let result: Transfer.Result
        switch options.transport {
        case .foreground:
            result = try await retrying { () async throws(MomentsClientError) in
                try await Transfer.perform(put, body: .file(partFile), timeout: self.timeout, sent: { bytes, _ in sent(bytes) })
            }
        case .background(let identifier):
            result = try await retrying { () async throws(MomentsClientError) in
                try await BackgroundParts.session(identifier).upload(put, from: partFile)
            }
        }
        try Self.check(result)
    }

    // MARK: State

    /// Where the state of `file`'s resumable upload is kept.
    static func stateFile(for file: URL, in directory: URL) -> URL {
        directory.appendingPathComponent("\(fileKey(file)).json")
    }

    /// A stable name for a file's upload: FNV-1a of its standardized path.
    static func fileKey(_ file: URL) -> String {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in file.standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        return "upload-" + String(hash, radix: 16)
    }

    static func identity(of file: URL) throws(MomentsClientError) -> (size: Int64, modified: Date) {
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            guard size > 0 else {
                throw MomentsClientError(kind: .file, code: "file_unreadable", message: "\(file.lastPathComponent) is empty.")
            }
            // Whole seconds: the JSON round trip keeps no more.
            let modified = (attributes[.modificationDate] as? Date).map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
            return (size, modified ?? Date(timeIntervalSince1970: 0))
        } catch let error as MomentsClientError {
            throw error
        } catch {
            throw MomentsClientError(
                kind: .file, code: "file_unreadable", message: "Cannot read \(file.lastPathComponent): \(error.localizedDescription)")
        }
    }

    static func loadState(_ stateFile: URL) -> ResumableUploadState? {
        guard let data = try? Data(contentsOf: stateFile) else { return nil }
        return try? MomentsJSON.decoder.decode(ResumableUploadState.self, from: data)
    }

    static func save(_ state: ResumableUploadState, to stateFile: URL) throws(MomentsClientError) {
        do {
            try FileManager.default.createDirectory(at: stateFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            try MomentsJSON.encoder.encode(state).write(to: stateFile, options: .atomic)
        } catch {
            throw MomentsClientError(
                kind: .file, code: "file_error", message: "Could not save the upload's state in \(stateFile.path): \(error.localizedDescription)")
        }
    }

    static func forget(_ stateFile: URL, partsOf file: URL, in directory: URL) {
        try? FileManager.default.removeItem(at: stateFile)
        let prefix = "\(fileKey(file))-part-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasPrefix(prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// The resumable uploads a state folder holds (to show them, or resume them at launch).
    public static func pendingResumableUploads(in directory: URL) -> [ResumableUploadState] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasPrefix("upload-") && $0.hasSuffix(".json") }.sorted()
            .compactMap { loadState(directory.appendingPathComponent($0)) }
    }

    /// Copies `length` bytes of `file` from `offset` to `destination`, 1 MiB at a time.
    static func copyRange(of file: URL, offset: Int64, length: Int64, to destination: URL) throws(MomentsClientError) {
        do {
            guard let input = FileHandle(forReadingAtPath: file.path) else {
                throw MomentsClientError(kind: .file, code: "file_unreadable", message: "Cannot read \(file.lastPathComponent).")
            }
            defer { try? input.close() }
            try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: destination.path, contents: nil),
                let output = FileHandle(forWritingAtPath: destination.path)
            else {
                throw MomentsClientError(kind: .file, code: "file_error", message: "Cannot write \(destination.path).")
            }
            defer { try? output.close() }
            try input.seek(toOffset: UInt64(offset))
            var remaining = length
            while remaining > 0 {
                guard let chunk = try input.read(upToCount: Int(min(remaining, 1 << 20))), !chunk.isEmpty else {
                    throw MomentsClientError(
                        kind: .file, code: "file_changed", message: "\(file.lastPathComponent) is shorter than when the upload began.")
                }
                try output.write(contentsOf: chunk)
                remaining -= Int64(chunk.count)
            }
        } catch let error as MomentsClientError {
            throw error
        } catch {
            throw MomentsClientError(
                kind: .file, code: "file_error", message: "Could not prepare a part of \(file.lastPathComponent): \(error.localizedDescription)")
        }
    }
}
