import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import MomentsContract
import MomentsModel
import NIOCore
import Storage
import Timelines

extension JobStatusReport: ResponseEncodable {}
extension JobDetails: ResponseEncodable {}
extension UploadAccepted: ResponseEncodable {}
extension UploadFormats: ResponseEncodable {}
extension DeviceErasure: ResponseEncodable {}
extension PushRegistration: ResponseEncodable {}
extension DeviceRegistration: ResponseEncodable {}
extension Account: ResponseEncodable {}
extension DirectUpload: ResponseEncodable {}
extension JobList: ResponseEncodable {}
extension UploadParts: ResponseEncodable {}

/// The device's job history; status, details, download and cancel of one job.
struct JobsController: Sendable {
    let jobs: Jobs
    let store: JobStore
    let storage: any ObjectStore
    let configuration: APIConfiguration
    let hub: JobEventsHub
    let playback: PlaybackLinks

    func addRoutes(to group: RouterGroup<MomentsRequestContext>) {
        group.get { request, context in try await list(request, context: context) }
        group.get("{id}") { request, context in
            let job = try await job(context)
            let links = links(request)
            var details = JobDetails(job, links: links)
            details.playback = playback.links(job, base: links.base)
            return details
        }
        group.get("{id}/download") { request, context in
            try await download(try await job(context), request: request, context: context)
        }
        group.get("{id}/poster") { request, context in
            try await still(try await job(context), kind: "poster", request: request, context: context)
        }
        group.get("{id}/timeline") { request, context in
            try Self.timeline(try await job(context), request: request)
        }
        group.get("{id}/thumbnails") { request, context in
            try await still(try await job(context), kind: "thumbnails", request: request, context: context)
        }
        group.get("{id}/events") { request, context in
            try await events(try await job(context), owner: context.identity.owner ?? "anonymous", request: request)
        }
        group.delete("{id}") { request, context in
            try await cancel(try await job(context), request: request)
        }
        group.delete("{id}/files") { request, context in
            try await erase(try await job(context), request: request, context: context)
        }
    }

    /// `GET /api/v1/play/{id}/{file}`: a completed highlight's file for a playback link signed by
    /// this API (`PlaybackLinks`, local storage), with byte ranges, and no token: the link is the key.
    func addPlaybackRoute(to router: Router<MomentsRequestContext>) {
        router.get("api/v1/play/{id}/{file}") { request, context in
            guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw APIError.jobNotFound() }
            guard let file = context.parameters.get("file").flatMap(PlaybackLinks.File.init(rawValue:)) else {
                throw APIError(.notFound, .notFound, "A playback link names highlight.mp4, poster.jpg or thumbnails.jpg.")
            }
            let query = request.uri.queryParameters
            try playback.check(
                job: id.uuidString.lowercased(), file: file, expires: query["expires"].map(String.init),
                signature: query["signature"].map(String.init))
            let job = try await store.job(id)
            guard let job else { throw APIError.jobNotFound() }
            try Self.checkFinished(job)
            guard let key = file.key(of: job) else { throw APIError.jobNotFound() }
            return try await serve(key, type: file.contentType, filename: file.rawValue, request: request, context: context, inline: true)
        }
    }

    /// `GET /api/v1/jobs/{id}/status`, what apps poll every two seconds: most of the API's traffic.
    /// It is routed beside, not behind, `AuthenticationMiddleware`, because it checks the token and
    /// reads the job in one prepared statement (`JobStore.pollStatus`); the answers and errors are
    /// the middleware's and `job(_:)`'s.
    func addStatusRoute(to router: Router<MomentsRequestContext>, authRequired: Bool) {
        router.get("api/v1/jobs/{id}/status") { request, context in
            let token = try DeviceToken.hash(of: request)
            if token == nil, authRequired { throw DeviceToken.missing }
            guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
                // Still 401 before 404 for a token that is not known.
                if let token, try await store.device(tokenSHA256: token) == nil { throw DeviceToken.unknown }
                throw APIError.jobNotFound()
            }
            let polled = try await store.pollStatus(job: id, tokenSHA256: token)
            return StatusJSON.response(try Self.report(polled, request: request.head, configuration: configuration))
        }
    }

    /// What a poll answers (also in the channel pipeline, `StatusPollRoute`): the report of a found
    /// job, 401 for a token that is not known or was revoked, 404 for any other job.
    static func report(_ polled: PolledJob, request: HTTPRequest, configuration: APIConfiguration) throws(APIError) -> JobStatusReport {
        switch polled {
        case .unknownToken: throw DeviceToken.unknown
        case .notFound: throw APIError.jobNotFound()
        case .found(let job): return JobStatusReport(job, links: links(request, configuration: configuration))
        }
    }

    /// `GET /api/v1/jobs?status=completed,failed&limit=20&cursor=…`: the device's jobs (anonymous
    /// use: the anonymous ones), newest first.
    private func list(_ request: Request, context: MomentsRequestContext) async throws -> JobList {
        let query = request.uri.queryParameters
        var statuses: [JobStatus] = []
        if let text = query["status"].map(String.init), !text.isEmpty {
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let status = JobStatus(rawValue: name.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    throw APIError(
                        .badRequest, .invalidStatus,
                        "status must be one or more of pending, processing, completed, failed, cancelled, separated by commas.")
                }
                statuses.append(status)
            }
        }
        var limit = 20
        if let text = query["limit"].map(String.init) {
            guard let value = Int(text), (1...100).contains(value) else {
                throw APIError(.badRequest, .invalidLimit, "limit must be a whole number from 1 to 100.")
            }
            limit = value
        }
        var cursor: JobCursor?
        if let text = query["cursor"].map(String.init), !text.isEmpty {
            guard let parsed = JobCursor(token: text) else {
                throw APIError(.badRequest, .invalidCursor, "cursor must be a next_cursor from an earlier page, unchanged.")
            }
            cursor = parsed
        }
        let page = try await store.ownJobs(owner: context.identity.owner, statuses: statuses, after: cursor, limit: limit)
        let links = links(request)
        return JobList(jobs: page.jobs.map { JobStatusReport($0, links: links) }, nextCursor: page.next?.token)
    }

    private func job(_ context: MomentsRequestContext) async throws -> JobRecord {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw APIError.jobNotFound() }
        // Looked up apart from the guard: Swift 6.3's optimizer crashes on a typed-throws `try await` inside it.
        let job = try await store.job(id)
        // Someone else's job is answered exactly like a job that does not exist.
        guard let job, job.owner == context.identity.owner else { throw APIError.jobNotFound() }
        return job
    }

    private static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    /// Where this API serves a job's files (download, poster, thumbnails: it redirects or streams),
    /// as the client reached it.
    func links(_ request: Request) -> JobLinks { Self.links(request.head, configuration: configuration) }

    static func links(_ request: HTTPRequest, configuration: APIConfiguration) -> JobLinks {
        // Behind a proxy (Railway, Render, an ingress) the scheme the client used is in X-Forwarded-Proto.
        let scheme = request.headerFields[forwardedProto].flatMap { $0 == "https" ? "https" : nil } ?? "http"
        return JobLinks(base: configuration.publicURL ?? "\(scheme)://\(request.authority ?? "localhost:\(configuration.port)")")
    }

    private func download(_ job: JobRecord, request: Request, context: MomentsRequestContext) async throws -> Response {
        try Self.checkFinished(job)
        guard let key = job.resultKey else { throw APIError.jobNotFound() }
        return try await serve(
            key, type: "video/mp4", filename: "highlight-\(job.id.uuidString.lowercased()).mp4",
            request: request, context: context)
    }

    /// `GET …/poster` and `GET …/thumbnails`: the completed highlight's JPEGs, as the download is served.
    private func still(_ job: JobRecord, kind: String, request: Request, context: MomentsRequestContext) async throws -> Response {
        try Self.checkFinished(job)
        guard let key = kind == "poster" ? job.posterKey : job.thumbnailsKey else {
            throw APIError(
                .notFound, kind == "poster" ? .posterUnavailable : .thumbnailsUnavailable,
                kind == "poster"
                    ? "This highlight has no poster (it was made before posters were, or its pictures could not be read)."
                    : "This highlight has no thumbnails (it was made before thumbnails were, or its pictures could not be read).")
        }
        return try await serve(
            key, type: "image/jpeg", filename: "\(kind)-\(job.id.uuidString.lowercased()).jpg",
            request: request, context: context, inline: true)
    }

    static func notReady(_ job: JobRecord) -> APIError {
        APIError(
            .conflict, .notReady,
            job.status.isTerminal
                ? "This job has no highlight: it ended \(job.status.rawValue)."
                : "The highlight is not ready yet. Check the job's status and try again when it is completed.")
    }

    /// `GET …/timeline?format=edl|fcpxml|otio`: the highlight's cut as an editor's timeline over the
    /// source (named by its file name, for the editor to link to the file on its disk).
    static func timeline(_ job: JobRecord, request: Request) throws -> Response {
        let text = request.uri.queryParameters["format"].map { String($0).lowercased() } ?? ""
        guard let format = TimelineFormat(rawValue: text) else {
            throw APIError(.badRequest, .invalidFormat, "format must be edl (CMX 3600), fcpxml (Final Cut Pro XML 1.10) or otio (OpenTimelineIO).")
        }
        try checkNotErased(job)
        guard job.status == .completed else { throw notReady(job) }
        guard let segments = job.segments, !segments.isEmpty, let media = job.sourceMedia, let duration = job.sourceDuration else {
            throw APIError(.notFound, .timelineUnavailable, "This highlight was made before timelines were; upload the video again for one.")
        }
        let file = job.originalFilename ?? "source.mp4"
        let stem = (file as NSString).deletingPathExtension
        let timeline = EditTimeline(
            name: "\(stem) highlight", sourceName: file,
            sourceURL: file.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? file,
            frameRate: media.frameRate, sourceDuration: duration, startTimecode: media.startTimecode,
            hasAudio: media.hasAudio, width: media.width, height: media.height,
            clips: segments.map { EditTimeline.Clip(start: $0.start, end: $0.end) })
        let headers: HTTPFields = [
            .contentType: format.contentType,
            .contentDisposition:
                "attachment; filename=\"\(String(stem.unicodeScalars.prefix(100).map { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.".unicodeScalars.contains($0) ? Character($0) : "_" }))-highlight.\(format.fileExtension)\"",
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: timeline.render(format))))
    }

    /// 410 `erased` once its owner erased it, 409 `not_ready` before the job completed (or when it
    /// ended otherwise), 410 `result_expired` once the retention sweep deleted its files.
    static func checkFinished(_ job: JobRecord) throws {
        try checkNotErased(job)
        guard job.status == .completed else { throw notReady(job) }
        guard job.resultExpiredAt == nil else {
            throw APIError(
                .gone, .resultExpired, "This highlight was deleted when its retention period ended. Upload the video again to make a new one.")
        }
    }

    static func checkNotErased(_ job: JobRecord) throws {
        guard let erased = job.erasedAt else { return }
        throw APIError(
            .gone, .erased, "This job was erased at its owner's request on \(MomentsJSON.format(erased)); its files are gone for good.")
    }

    /// `DELETE …/files` (API 1.2): the job's files and what its row says of the video erased at
    /// its owner's request (cancelled first if unfinished); the row stays, marked. Again: the same
    /// answer, finishing whatever storage cut short.
    private func erase(_ job: JobRecord, request: Request, context: MomentsRequestContext) async throws -> JobDetails {
        let actor = "device:\(context.identity.owner ?? "anonymous")"
        do {
            let erased = try await jobs.erase(job.id, storage: storage, actor: actor)
            guard let erased else { throw APIError.jobNotFound() }
            context.logger.notice("job erased", metadata: ["job_id": "\(job.id.uuidString.lowercased())"])
            return JobDetails(erased, links: links(request))
        } catch let error as StorageError {
            throw APIError.erasureCutShort(error)
        }
    }

    /// A stored object: a redirect to a short-lived signed storage URL, or (local storage) the
    /// file itself with byte ranges.
    private func serve(
        _ key: String, type: String, filename: String, request: Request, context: MomentsRequestContext,
        inline: Bool = false
    ) async throws -> Response {
        if let presigner = storage.presigning {
            // A short-lived signed storage URL: URLSession follows the redirect.
            let url = try presigner.signedURL(for: key, method: "GET", expires: configuration.downloadLinkLifetime)
            return Response.redirect(to: url.absoluteString, type: .found)
        }
        guard let local = storage as? LocalObjectStore else {
            throw APIError(.internalServerError, .internalError, "This storage cannot serve downloads.")
        }
        let file = try local.fileURL(for: key)
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0
        var headers: HTTPFields = [
            .contentType: type, .acceptRanges: "bytes",
            .contentDisposition: "\(inline ? "inline" : "attachment"); filename=\"\(filename)\"",
        ]
        guard let rangeHeader = request.headers[.range] else {
            headers[.contentLength] = String(size)
            return Response(status: .ok, headers: headers, body: try await FileIO().loadFile(path: file.path, context: context))
        }
        guard let range = Self.byteRange(rangeHeader, size: size) else {
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
        headers[.contentLength] = String(range.count)
        return Response(
            status: .partialContent, headers: headers,
            body: try await FileIO().loadFile(path: file.path, range: range, context: context))
    }

    /// One range of `bytes=a-b`, `bytes=a-` or `bytes=-n` within a file of `size` bytes (AVPlayer
    /// asks for one at a time); nil when it cannot be satisfied.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard size > 0, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let first = Int(spec[0].trimmingCharacters(in: .whitespaces)), last = Int(spec[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (let start?, let end?) where start <= end && start < size: return start...min(end, size - 1)
        case (let start?, nil) where start < size && spec[1].isEmpty: return start...(size - 1)
        case (nil, let suffix?) where spec[0].isEmpty && suffix > 0: return max(0, size - suffix)...(size - 1)
        default: return nil
        }
    }

    /// Server-Sent Events: the job's status now, then again whenever it changes, until it ends.
    /// Each event is `event: status` with the same JSON as `/status`; comments keep the stream alive.
    private func events(_ job: JobRecord, owner: String, request: Request) async throws -> Response {
        guard let (token, signals) = await hub.watch(job.id, owner: owner) else {
            throw APIError(
                .tooManyRequests, .tooManyStreams,
                "Too many event streams are open for this device (at most \(hub.perOwner)). Close one, or poll /status.")
        }
        let store = self.store
        let hub = self.hub
        let controller = self
        let body = ResponseBody { writer in
            var last: JobStatusReport?
            do {
                func sendIfChanged(_ writer: inout any ResponseBodyWriter) async throws -> Bool {
                    guard let current = try await store.job(job.id) else { return true }
                    let status = JobStatusReport(current, links: controller.links(request))
                    if status != last {
                        let json = String(decoding: try MomentsJSON.encoder.encode(status), as: UTF8.self)
                        try await writer.write(ByteBuffer(string: "event: status\ndata: \(json)\n\n"))
                        last = status
                    }
                    return current.status.isTerminal
                }
                var finished = try await sendIfChanged(&writer)
                var iterator = signals.makeAsyncIterator()
                while !finished, let signal = await iterator.next() {
                    if signal == .keepAlive { try await writer.write(ByteBuffer(string: ": keep-alive\n\n")) }
                    finished = try await sendIfChanged(&writer)
                }
            } catch {
                await hub.stopWatching(job.id, token: token)
                throw error
            }
            await hub.stopWatching(job.id, token: token)
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }

    private func cancel(_ job: JobRecord, request: Request) async throws -> JobStatusReport {
        switch try await jobs.cancel(job.id) {
        case .cancelled:
            // A waiting job leaves the queue now; a running one is stopped by its worker within a second or two.
            guard let cancelled = try await store.job(job.id) else { throw APIError.jobNotFound() }
            return JobStatusReport(cancelled, links: JobLinks(base: nil))
        case .alreadyFinished(let status):
            throw APIError(.conflict, .alreadyFinished, "This job already ended \(status.rawValue); there is nothing to cancel.")
        case .notFound:
            throw APIError.jobNotFound()
        }
    }
}
