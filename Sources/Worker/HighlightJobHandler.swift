import Foundation
import Highlights
import JobStore
import Jobs
import Media
import MomentsContract
import MomentsModel
import MomentsSupport
import Storage
import Synchronization
import Tracing

/// The real work of a job: fetch the source from storage, run the highlight engine, store the result.
///
/// Each attempt works in a folder of its own under `workDirectory`, removed when the attempt ends
/// however it ends. The engine runs in a child process per attempt (`EngineIsolation.childProcess`:
/// a crash or a runaway allocation ends that process, not the worker), or, in tests and tools, on a
/// thread of this one; either way it stops within a second of the job's cancellation. Each attempt stores its highlight under a
/// key of its own (`results/<id>-<attempt>.mp4`), so an attempt that lost its lease can never
/// overwrite the result of the attempt that took over; the worker deletes an attempt's result
/// through `discard` only when the store says the job was cancelled or taken over.
public struct HighlightJobHandler: JobHandler {
    let storage: any ObjectStore
    let workDirectory: URL
    let isolation: EngineIsolation
    /// Delete the uploaded source once the highlight is stored and the job completed.
    let deleteSourceAfterSuccess: Bool

    public init(
        storage: any ObjectStore, workDirectory: URL = FileManager.default.temporaryDirectory,
        deleteSourceAfterSuccess: Bool = true, isolation: EngineIsolation = .inProcess
    ) {
        self.storage = storage
        self.workDirectory = workDirectory
        self.deleteSourceAfterSuccess = deleteSourceAfterSuccess
        self.isolation = isolation
    }

    /// Removes the work folders of attempts whose worker died (nothing written in them for an
    /// hour); returns their names. Run at start-up.
    public func removeLeftovers(olderThan age: TimeInterval = 3600) -> [String] {
        Leftovers.remove(in: workDirectory, prefix: "moments-job-", olderThan: age)
    }

    public func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        let folder = workDirectory.appendingPathComponent("moments-job-\(job.id.uuidString.lowercased())-\(context.lease.attempt)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw JobFailure(code: ErrorCode.ioError.rawValue, message: "The worker could not create its work folder.", retryable: true)
        }
        defer { try? FileManager.default.removeItem(at: folder) }

        await context.progress(0, stage: "downloading", message: "Fetching your video")
        let source = folder.appendingPathComponent("source.\(Self.fileExtension(of: job.originalFilename))")
        try await withSpan("download", ofKind: .client) { span in
            span.attributes["moments.object.key"] = job.sourceKey
            do {
                // Never more than the file that was accepted.
                try await storage.get(key: job.sourceKey, to: source, limit: job.sourceSize)
            } catch {
                throw Self.failure(error, whileDoing: "fetching the uploaded video")
            }
        }
        try Task.checkCancellation()
        var music: MusicSettings?
        if let choice = job.music { music = try await fetchMusic(choice, into: folder) }

        let output = folder.appendingPathComponent("highlight.mp4")
        let stills = StillPaths(
            poster: folder.appendingPathComponent("poster.jpg").path,
            thumbnails: folder.appendingPathComponent("thumbnails.jpg").path)
        let report = try await highlight(source: source, output: output, stills: stills, music: music, job: job, context: context)
        try Task.checkCancellation()

        await context.progress(97, stage: "uploading", message: "Saving your highlight")
        let key = ObjectKey.result(of: job.id, attempt: context.lease.attempt)
        let stillKeys =
            report.stills == nil
            ? nil
            : (
                poster: ObjectKey.still(of: job.id, attempt: context.lease.attempt, .poster),
                thumbnails: ObjectKey.still(of: job.id, attempt: context.lease.attempt, .thumbnails)
            )
        let stored = try await withSpan("upload", ofKind: .client) { span in
            span.attributes["moments.object.key"] = key
            do {
                let stored = try await storage.put(key: key, from: output, contentType: "video/mp4")
                if let stillKeys, let poster = stills.poster, let thumbnails = stills.thumbnails {
                    _ = try await storage.put(key: stillKeys.poster, from: URL(fileURLWithPath: poster), contentType: "image/jpeg")
                    _ = try await storage.put(key: stillKeys.thumbnails, from: URL(fileURLWithPath: thumbnails), contentType: "image/jpeg")
                }
                return stored
            } catch {
                for key in [key, stillKeys?.poster, stillKeys?.thumbnails].compactMap({ $0 }) { try? await storage.delete(key: key) }
                throw Self.failure(error, whileDoing: "saving the highlight")
            }
        }
        // Cancelled or not from here on, the result goes back to the worker: it knows, from the
        // store, whether the job is still this attempt's, and deletes the result if not.
        return JobResult(
            resultKey: key, resultSize: stored.size, sourceDuration: report.input.duration,
            segments: report.segments.map { ResultSegment(start: $0.start, end: $0.end, score: $0.score) },
            sourceMedia: SourceMedia(
                frameRate: report.input.frameRate, startTimecode: report.input.startTimecode,
                hasAudio: report.input.hasAudio, width: report.input.displayWidth,
                height: report.input.displayHeight),
            posterKey: stillKeys?.poster, thumbnailsKey: stillKeys?.thumbnails)
    }

    /// Deletes the highlight this attempt stored, once the store says the job was cancelled or
    /// taken over.
    public func discard(_ result: JobResult) async {
        for key in result.keys { try? await storage.delete(key: key) }
    }

    /// Deletes the source of a completed job when so configured. A failed delete is left to the
    /// retention sweep, which deletes every object of an expired job whose source is still there.
    public func completed(_ job: JobRecord) async -> Bool {
        guard deleteSourceAfterSuccess else { return false }
        do {
            try await storage.delete(key: job.sourceKey)
            // A track uploaded with the video goes with it (a library track stays for other jobs).
            if let key = job.music?.uploadedKey { try? await storage.delete(key: key) }
            return true
        } catch {
            return false
        }
    }

    /// Runs the engine; its progress (0…1) becomes job progress 3…96 %. What the attempt may take
    /// follows from the source's length, which the API's probe recorded with the job: about half
    /// of it at worst (4K HDR on two cores), so its deadline is twice the source plus two minutes.
    /// A job recorded without it (before the API recorded it) learns it from the engine's probe.
    private func highlight(
        source: URL, output: URL, stills: StillPaths, music: MusicSettings?, job: JobRecord,
        context: JobContext
    ) async throws -> HighlightReport {
        var settings = HighlightSettings(duration: job.targetDuration, quality: job.quality, codec: job.codec, choices: job.choices)
        settings.stills = stills
        settings.music = music
        let (updates, sink) = AsyncStream.makeStream(of: ProgressUpdate.self, bufferingPolicy: .bufferingNewest(1))
        let forward = Task {
            for await update in updates {
                await context.progress(3 + Int(update.fraction * 93), stage: update.stage.rawValue, message: update.stage.message)
            }
        }
        let stages = StageSpans(parent: ServiceContext.current)
        let expect: @Sendable (Double) -> Void = { context.expect(.seconds($0 / 2 + 30)) }
        if let duration = job.sourceDuration { expect(duration) }
        let recorded = job.sourceDuration != nil
        let probed: @Sendable (Double) -> Void = { duration in if !recorded { expect(duration) } }
        let progress: @Sendable (ProgressUpdate) -> Void = { update in
            stages.enter(update.stage)
            sink.yield(update)
        }
        let outcome: Result<HighlightReport, any Error>
        do {
            switch isolation {
            case .inProcess:
                outcome = .success(try await Self.runHere(source: source, output: output, settings: settings, progress: progress))
            case .childProcess(let process):
                let request = EngineRequest(
                    input: source.path, output: output.path, poster: stills.poster, thumbnails: stills.thumbnails,
                    settings: settings, memoryLimit: nil)
                outcome = .success(try await process.highlight(request, probed: probed, progress: progress))
            }
        } catch {
            outcome = .failure(Self.failure(ofEngine: error))
        }
        sink.finish()
        stages.end(failure: outcome.failure)
        await forward.value  // the last progress write lands before the job moves on
        return try outcome.get()
    }

    /// The engine on a thread of this process (it blocks while it decodes and encodes).
    private static func runHere(
        source: URL, output: URL, settings: HighlightSettings,
        progress: @escaping @Sendable (ProgressUpdate) -> Void
    ) async throws -> HighlightReport {
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HighlightReport, any Error>) in
                let thread = Thread {
                    do throws(MomentsError) {
                        continuation.resume(
                            returning: try HighlightEngine().highlight(
                                input: source.path, output: output.path, settings: settings,
                                cancellation: cancellation, progress: progress))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                thread.name = "moments-engine"
                thread.stackSize = 8 << 20
                thread.start()
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// The engine's failure as the attempt's: cancelled stays cancelled; bad media is permanent; a
    /// crashed engine or one past its memory limit is retried, and once no attempt is left, says the
    /// video could not be processed (no later try of the same file would fare better).
    static func failure(ofEngine error: any Error) -> any Error {
        switch error {
        case let error as MomentsError where error.code == .cancelled:
            return CancellationError()
        case let error as MomentsError where error.code == .outOfMemory:
            return JobFailure(
                code: error.code.rawValue, message: error.message, retryable: true,
                diagnostics: "the engine reported: \(error.message)", finalMessage: outOfMemoryMessage)
        case let error as MomentsError:
            return JobFailure(error)
        case let error as EngineFailure:
            let finalMessage: String? =
                switch error.code {
                case .outOfMemory: outOfMemoryMessage
                case .engineCrashed: crashedMessage
                default: nil
                }
            return JobFailure(
                code: error.code.rawValue, message: error.message, retryable: true, diagnostics: error.diagnostics,
                finalMessage: finalMessage)
        case is CancellationError:
            return error
        default:
            return JobFailure(
                code: ErrorCode.internalError.rawValue, message: "The worker could not run its video engine.", retryable: true,
                diagnostics: "\(error)")
        }
    }

    static let crashedMessage =
        "This video could not be processed: our video engine stopped on it every time we tried. "
        + "Export it again as MP4 or MOV and upload it once more."
    static let outOfMemoryMessage =
        "This video could not be processed: it needs more memory than our workers have. "
        + "Try a shorter video or one of a lower resolution."

    /// The extension the engine sees (it probes the bytes; the extension only helps FFmpeg guess).
    /// Fetches the track a job asked for into `folder`: a library track with its analysis (both
    /// stored by `moments music add` under `music/<id>/`), or the one uploaded with the video (the
    /// engine analyses it). A library track removed before the job ran fails it for good
    /// (`music_unavailable`); an uploaded one gone is as the source gone (`source_missing`).
    func fetchMusic(_ choice: MusicChoice, into folder: URL) async throws -> MusicSettings {
        if let key = choice.uploadedKey {
            let track = folder.appendingPathComponent("music." + Self.fileExtension(of: key))
            do {
                _ = try await storage.get(key: key, to: track, limit: nil)
            } catch {
                throw Self.failure(error, whileDoing: "fetching the music uploaded with the video")
            }
            return MusicSettings(
                path: track.path, analysis: nil, volume: choice.volume, keepSourceAudio: choice.keepSourceAudio,
                title: choice.filename)
        }
        guard let id = choice.trackID else {
            throw JobFailure(code: ErrorCode.internalError.rawValue, message: "The job names no music.", retryable: false)
        }
        let unavailable = JobFailure(
            code: ErrorCode.musicUnavailable.rawValue,
            message: "The music chosen for this highlight was removed from the library. Choose another track and upload again.",
            retryable: false)
        do {
            guard let stored = try await storage.list(prefix: ObjectKey.libraryTrackPrefix(id), after: nil, limit: 1).first else { throw unavailable }
            let track = folder.appendingPathComponent("music." + Self.fileExtension(of: stored.key))
            let json = folder.appendingPathComponent("music.json")
            _ = try await storage.get(key: stored.key, to: track, limit: nil)
            _ = try await storage.get(key: ObjectKey.libraryAnalysis(id), to: json, limit: 1 << 24)
            guard let analysis = try? JSONDecoder().decode(MusicAnalysis.self, from: Data(contentsOf: json)) else {
                throw JobFailure(
                    code: ErrorCode.musicUnavailable.rawValue,
                    message: "The music chosen for this highlight could not be read from the library. Choose another track.",
                    retryable: false)
            }
            return MusicSettings(path: track.path, analysis: analysis, volume: choice.volume, keepSourceAudio: choice.keepSourceAudio)
        } catch let failure as JobFailure {
            throw failure
        } catch let error as StorageError where error.code == .notFound {
            throw unavailable
        } catch {
            throw Self.failure(error, whileDoing: "fetching the music")
        }
    }

    static func fileExtension(of filename: String?) -> String {
        let ext = ((filename ?? "") as NSString).pathExtension.lowercased()
        return !ext.isEmpty && ext.count <= 5 && ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? ext : "mp4"
    }

    /// A storage error as a job failure: a missing source cannot come back; the rest may pass.
    static func failure(_ error: any Error, whileDoing what: String) -> JobFailure {
        guard let error = error as? StorageError else {
            return JobFailure(code: ErrorCode.storageError.rawValue, message: "Storage failed while \(what).", retryable: true)
        }
        switch error.code {
        case .notFound:
            return JobFailure(
                code: ErrorCode.sourceMissing.rawValue,
                message: "The uploaded video is no longer available. Please upload it again.", retryable: false)
        case .tooLarge:
            return JobFailure(
                code: ErrorCode.sourceChanged.rawValue,
                message: "The stored video is not the file that was accepted (it is longer). Please upload it again.", retryable: false)
        case .ioError:
            return JobFailure(code: ErrorCode.ioError.rawValue, message: "The worker ran into a disk problem while \(what).", retryable: true)
        case .forbidden, .unavailable, .invalidKey, .invalidConfiguration, .cancelled:
            return JobFailure(code: ErrorCode.storageError.rawValue, message: "Storage failed while \(what): \(error.message)", retryable: true)
        }
    }
}

/// The engine's stages (probe, analyse, select, render, finish) as spans under the attempt's, one
/// open at a time: the engine reports its progress from its own thread, and the first report of a
/// stage ends the previous stage's span and opens the next.
final class StageSpans: Sendable {
    private let parent: ServiceContext?
    private let open = Mutex<(stage: Stage, span: any Span)?>(nil)

    init(parent: ServiceContext?) {
        self.parent = parent
    }

    func enter(_ stage: Stage) {
        guard let parent else { return }  // not traced
        open.withLock { current in
            guard current?.stage != stage else { return }
            current?.span.end()
            current = (stage, startSpan(Self.name(of: stage), context: parent))
        }
    }

    /// Ends the open span; `failure` marks it as the stage that failed.
    func end(failure: (any Error)?) {
        open.withLock { current in
            if let failure, let span = current?.span {
                span.recordError(failure)
                span.setStatus(SpanStatus(code: .error))
            }
            current?.span.end()
            current = nil
        }
    }

    static func name(of stage: Stage) -> String {
        switch stage {
        case .probing: "probe"
        case .analyzing: "analyse"
        case .selecting: "select"
        case .rendering: "render"
        case .finishing: "finish"
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
