import Foundation
import MomentsContract
import MomentsModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How far a transfer has come.
public struct TransferProgress: Equatable, Sendable {
    public var bytes: Int64
    /// Nil when the size is not known.
    public var total: Int64?

    public init(bytes: Int64, total: Int64?) {
        self.bytes = bytes
        self.total = total
    }

    /// 0…1, or nil when the total is unknown.
    public var fraction: Double? {
        guard let total, total > 0 else { return nil }
        return min(1, Double(bytes) / Double(total))
    }
}

/// Moments' HTTP API with async/await: devices, uploads (multipart, or straight to storage for big
/// files), status (polling or Server-Sent Events), details, cancel, download, formats and the plan.
///
/// Every failure is a `MomentsClientError` carrying the server's code and sentence. Only calls that
/// are safe to repeat (reads, cancel, starting a direct upload, the PUT to storage) are retried, up
/// to `maxAttempts` times with backoff, and only for network trouble and 408/429/5xx answers.
public struct MomentsClient: Sendable {
    public var baseURL: URL
    /// The device token (`mdt_…`) sent as `Authorization: Bearer`; nil for servers with `AUTH_REQUIRED=false`.
    public var token: String?
    /// Files at least this large go straight to storage (`POST /api/v1/uploads`, PUT, start) when
    /// the server offers it; smaller ones as one multipart request.
    public var directUploadThreshold: Int64
    public var maxAttempts: Int
    /// Seconds without a byte before a request gives up.
    public var timeout: TimeInterval

    public init(
        baseURL: URL, token: String? = nil, directUploadThreshold: Int64 = 64 << 20, maxAttempts: Int = 3,
        timeout: TimeInterval = 60
    ) {
        self.baseURL = baseURL
        self.token = token
        self.directUploadThreshold = directUploadThreshold
        self.maxAttempts = max(1, maxAttempts)
        self.timeout = timeout
    }

    // MARK: Devices and plan

    /// Registers this install; the answer holds the only copy of its token. Use the token from then on
    /// (`client.token = registration.token`) and keep it safe (the keychain on iOS).
    public func registerDevice(name: String? = nil) async throws(MomentsClientError) -> DeviceRegistration {
        let body = try encode(DeviceRegistrationRequest(name: name))
        return try await send("POST", "api/v1/devices", body: body, idempotent: false)
    }

    /// Asks for a push when each of this device's jobs ends (API 1.2): the token APNs gave the app
    /// (`application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`) and its environment
    /// (`.sandbox` for development builds). Call it at every launch: APNs may change the token.
    /// The alert names localisable keys (`MOMENTS_READY_TITLE`, `MOMENTS_READY_BODY`,
    /// `MOMENTS_FAILED_TITLE`, `MOMENTS_FAILED_BODY`, the file name as the argument) and carries
    /// `job_id`, `status` and the job's `metadata`. Throws `push_unavailable` when the server sends no pushes.
    @discardableResult
    public func registerPush(deviceToken: Data, environment: APNsEnvironment = .production) async throws(MomentsClientError)
        -> PushRegistration
    {
        let hex = deviceToken.map { String(format: "%02x", $0) }.joined()
        let body = try encode(PushRegistration(token: hex, environment: environment.rawValue))
        return try await send("PUT", "api/v1/devices/me/push", body: body, idempotent: true)
    }

    /// No more pushes to this device (API 1.2).
    public func unregisterPush() async throws(MomentsClientError) {
        try Self.check(
            try await retrying { [timeout] () async throws(MomentsClientError) -> Transfer.Result in
                try await Transfer.perform(request("DELETE", "api/v1/devices/me/push"), body: .none, timeout: timeout)
            })
    }

    /// Erases this device and everything of it (API 1.2), as the App Store asks of apps that make
    /// accounts: every job is cancelled if unfinished, its files (video, highlight, poster,
    /// thumbnails) deleted and its file name and metadata cleared; the token stops working. Safe to
    /// repeat with the same token (a repeat finishes what a storage failure cut short). Forget the
    /// token afterwards; `registerDevice` starts afresh.
    public func eraseDevice() async throws(MomentsClientError) -> DeviceErasure {
        try await send("DELETE", "api/v1/devices/me", idempotent: true)
    }

    /// The device's plan and this month's usage.
    public func account() async throws(MomentsClientError) -> Account {
        try await send("GET", "api/v1/me")
    }

    /// What the server accepts: extensions, size and length limits, durations, qualities.
    public func formats() async throws(MomentsClientError) -> UploadFormats {
        try await send("GET", "api/v1/upload/formats")
    }

    /// API 1.2: the server's music library, for a picker (a track's `id` goes in `MusicChoice`).
    public func music() async throws(MomentsClientError) -> [MusicLibraryList.Track] {
        let list: MusicLibraryList = try await send("GET", "api/v1/music")
        return list.tracks
    }

    // MARK: Jobs

    public func status(of job: UUID) async throws(MomentsClientError) -> JobStatusReport {
        try await send("GET", "api/v1/jobs/\(job.uuidString.lowercased())/status")
    }

    public func details(of job: UUID) async throws(MomentsClientError) -> JobDetails {
        try await send("GET", "api/v1/jobs/\(job.uuidString.lowercased())")
    }

    /// A completed highlight at URLs that need no token until `expiresAt` (API 1.2), with byte
    /// ranges: `AVPlayer(url: URL(string: links.playbackURL)!)` plays it without downloading first.
    /// Ask again for fresh links once they expire. Throws `not_ready` (409) before the job
    /// completed, or when the server is older than 1.2.
    public func playback(of job: UUID) async throws(MomentsClientError) -> PlaybackURLs {
        let details = try await details(of: job)
        guard let playback = details.playback else {
            throw MomentsClientError(
                kind: .server, status: 409, code: "not_ready",
                message: details.report.status == .completed
                    ? "This server gives no playback links; download the highlight instead."
                    : "The highlight is not ready yet. Check the job's status and try again when it is completed.")
        }
        return playback
    }

    /// A page of this device's jobs, newest first: any of `statuses` (empty: all), `limit` (1–100)
    /// a page; `cursor` is the `nextCursor` of the page before (nil: the first page).
    public func jobs(statuses: [JobStatus] = [], limit: Int = 20, cursor: String? = nil) async throws(MomentsClientError) -> JobList {
        var query: [URLQueryItem] = [URLQueryItem(name: "limit", value: String(limit))]
        if !statuses.isEmpty { query.append(URLQueryItem(name: "status", value: statuses.map(\.rawValue).joined(separator: ","))) }
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try await send("GET", "api/v1/jobs", query: query)
    }

    /// Cancels a pending or running job; answers its status (`cancelled`). A job that already ended
    /// answers 409 `already_finished`.
    @discardableResult
    public func cancel(_ job: UUID) async throws(MomentsClientError) -> JobStatusReport {
        try await send("DELETE", "api/v1/jobs/\(job.uuidString.lowercased())", idempotent: true)
    }

    /// Erases the job's files and what it said of the video (API 1.2): cancelled first if
    /// unfinished; the source, highlight, poster and thumbnails deleted, the file name and metadata
    /// cleared. The job stays in the history with `erasedAt`; its downloads answer `erased` (410).
    /// Safe to repeat.
    public func erase(_ job: UUID) async throws(MomentsClientError) -> JobDetails {
        try await send("DELETE", "api/v1/jobs/\(job.uuidString.lowercased())/files", idempotent: true)
    }

    /// The job's status now and at every change until it ends: from the server's Server-Sent Events
    /// stream, or by polling every `pollInterval` when the stream is not available (a proxy that
    /// buffers it, say). The sequence finishes after the terminal status.
    public func updates(of job: UUID, pollInterval: Duration = .seconds(2)) -> AsyncThrowingStream<JobStatusReport, any Error> {
        let client = self
        return AsyncThrowingStream(JobStatusReport.self, bufferingPolicy: .unbounded) { continuation in
            let task = Task {
                do {
                    var last: JobStatusReport?
                    do {
                        last = try await client.followEvents(of: job, { report in _ = continuation.yield(report) })
                    } catch let error as MomentsClientError where error.kind == .transport || error.kind == .invalidResponse {
                        // Fall back to polling below.
                    }
                    while last?.status.isTerminal != true {
                        try Task.checkCancellation()
                        let report = try await client.status(of: job)  // a GET: retried on transient trouble
                        if report != last { continuation.yield(report) }
                        last = report
                        if !report.status.isTerminal { try await Task.sleep(for: pollInterval) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Reads `GET /api/v1/jobs/{id}/events` until the server closes it (after the terminal status);
    /// hands every status to `handle` and returns the last.
    @discardableResult
    func followEvents(of job: UUID, _ handle: @escaping @Sendable (JobStatusReport) -> Void) async throws(MomentsClientError) -> JobStatusReport {
        var request = request("GET", "api/v1/jobs/\(job.uuidString.lowercased())/events")
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        let (chunks, feed) = AsyncStream.makeStream(of: Data.self)
        let parser = EventStreamParser()
        let reader = Task {
            var reports: [JobStatusReport] = []
            for await chunk in chunks {
                for event in parser.feed(chunk) where event.name == "status" {
                    if let report = try? MomentsJSON.decoder.decode(JobStatusReport.self, from: Data(event.data.utf8)) {
                        reports.append(report)
                        handle(report)
                    }
                }
            }
            return reports
        }
        let result: Transfer.Result
        do {
            // The stream sends a keep-alive every 15 s: a minute of silence means it is gone.
            result = try await Transfer.perform(request, sink: .stream({ feed.yield($0) }), timeout: 60)
        } catch {
            feed.finish()
            _ = await reader.value
            throw error
        }
        feed.finish()
        let reports = await reader.value
        try Self.check(result)
        guard let last = reports.last, last.status.isTerminal else {
            throw MomentsClientError.invalid("The event stream ended before the job did.")
        }
        return last
    }

    /// Downloads the highlight of a completed job to `destination` (following the redirect to
    /// storage), reporting bytes as they arrive. Returns `destination`.
    @discardableResult
    public func download(
        _ job: UUID, to destination: URL,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(MomentsClientError) -> URL {
        try await fetch("download", of: job, to: destination, progress: progress)
    }

    /// Downloads the poster JPEG of a completed job (API 1.1): its best picture that is neither
    /// dark nor blurred, at the highlight's shape. `poster_unavailable` for highlights made before posters.
    @discardableResult
    public func poster(of job: UUID, to destination: URL) async throws(MomentsClientError) -> URL {
        try await fetch("poster", of: job, to: destination, progress: nil)
    }

    /// Downloads the thumbnail strip JPEG of a completed job (API 1.1): one picture per segment.
    @discardableResult
    public func thumbnails(of job: UUID, to destination: URL) async throws(MomentsClientError) -> URL {
        try await fetch("thumbnails", of: job, to: destination, progress: nil)
    }

    /// The completed highlight's cut as an editor's timeline (API 1.1): `edl`, `fcpxml` or `otio`.
    public func timeline(of job: UUID, format: String) async throws(MomentsClientError) -> String {
        var request = request("GET", "api/v1/jobs/\(job.uuidString.lowercased())/timeline")
        if let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.queryItems = [URLQueryItem(name: "format", value: format)]
            request.url = components.url
        }
        let result = try await retrying { () async throws(MomentsClientError) in
            try await Transfer.perform(request, timeout: self.timeout)
        }
        try Self.check(result)
        return String(decoding: result.data, as: UTF8.self)
    }

    /// GETs one of a job's files (`download`, `poster`, `thumbnails`) to `destination`, through a
    /// hidden partial file beside it.
    func fetch(
        _ file: String, of job: UUID, to destination: URL,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(MomentsClientError) -> URL {
        let request = request("GET", "api/v1/jobs/\(job.uuidString.lowercased())/\(file)")
        let partial = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString.prefix(8)).part")
        defer { try? FileManager.default.removeItem(at: partial) }
        let result = try await retrying { () async throws(MomentsClientError) in
            try await Transfer.perform(
                request, sink: .file(partial), timeout: self.timeout,
                written: { written, total in
                    progress?(TransferProgress(bytes: written, total: total > 0 ? total : nil))
                })
        }
        try Self.check(result)
        do {
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.moveItem(at: partial, to: destination)
        } catch {
            throw MomentsClientError(kind: .file, code: "file_error", message: "Could not save \(destination.path): \(error.localizedDescription)")
        }
        return destination
    }

    // MARK: Plumbing

    func request(_ method: String, _ path: String) -> URLRequest {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// A JSON call: `GET`s are always retried on transient trouble, others only when `idempotent`.
    func send<T: Decodable>(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: Data? = nil, headers: [String: String] = [:],
        idempotent: Bool? = nil
    ) async throws(MomentsClientError) -> T {
        var request = request(method, path)
        if !query.isEmpty, let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.queryItems = query
            request.url = components.url
        }
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let repeatable = idempotent ?? (method == "GET")
        let exchange = { [timeout] () async throws(MomentsClientError) -> Transfer.Result in
            try await Transfer.perform(request, body: body.map { .data($0) } ?? .none, timeout: timeout)
        }
        let result = repeatable ? try await retrying(exchange) : try await exchange()
        return try decode(result)
    }

    /// Runs `exchange` up to `maxAttempts` times while it fails or answers with a transient error
    /// (network trouble, 408/429/5xx), with backoff 0.5 s, 1 s, 2 s, …; the last answer is returned as it is.
    func retrying(_ exchange: () async throws(MomentsClientError) -> Transfer.Result) async throws(MomentsClientError) -> Transfer.Result {
        var attempt = 1
        while true {
            do throws(MomentsClientError) {
                let result = try await exchange()
                let status = result.response.statusCode
                if attempt < maxAttempts, !(200..<300).contains(status) {
                    let failure = MomentsClientError.server(status: status, body: result.data)
                    if failure.isTransient { throw failure }
                }
                return result
            } catch  where error.isTransient && attempt < maxAttempts {
                // 0.5 s, then twice as long each time, at most 8 s.
                let delay = min(Duration.milliseconds(500) * (1 << min(attempt - 1, 4)), .seconds(8))
                do { try await Task.sleep(for: delay) } catch {
                    throw MomentsClientError(kind: .cancelled, code: "cancelled", message: "The request was cancelled.")
                }
                attempt += 1
            }
        }
    }

    static func check(_ result: Transfer.Result) throws(MomentsClientError) {
        guard (200..<300).contains(result.response.statusCode) else {
            throw MomentsClientError.server(status: result.response.statusCode, body: result.data)
        }
    }

    func decode<T: Decodable>(_ result: Transfer.Result) throws(MomentsClientError) -> T {
        try Self.check(result)
        do {
            return try MomentsJSON.decoder.decode(T.self, from: result.data)
        } catch {
            throw MomentsClientError.invalid("The server's answer is not the expected \(T.self): \(error)")
        }
    }

    func encode<T: Encodable>(_ value: T) throws(MomentsClientError) -> Data {
        do { return try MomentsJSON.encoder.encode(value) } catch {
            throw MomentsClientError.invalid("Could not encode the request: \(error)")
        }
    }
}

/// Which APNs environment a device token belongs to: `sandbox` for development builds,
/// `production` for TestFlight and the App Store.
public enum APNsEnvironment: String, Sendable, CaseIterable {
    case sandbox, production
}
