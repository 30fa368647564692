import Foundation
import MomentsContract
import MomentsModel
import Observation

/// What a highlight screen needs from Moments. `MomentsClient` is the real one; previews and tests
/// inject their own.
public protocol HighlightService: Sendable {
    /// Uploads the video; `progress` (0…1) may be called from any thread.
    func submit(
        file: URL, targetDuration: Int, quality: Quality,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID
    /// The job's status at every change until it ends.
    func updates(of job: UUID) -> AsyncThrowingStream<JobStatusReport, any Error>
    /// Downloads the finished highlight to `destination`.
    func download(job: UUID, to destination: URL) async throws -> URL
    func cancel(job: UUID) async throws
    /// API 1.1: uploads with segment and framing choices.
    func submit(
        file: URL, targetDuration: Int, quality: Quality, choices: HighlightChoices,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID
    /// API 1.1: downloads the finished highlight's poster JPEG to `destination`.
    func poster(job: UUID, to destination: URL) async throws -> URL
    /// API 1.1: a page of the device's jobs, newest first (`cursor`: the page before's `nextCursor`).
    func history(cursor: String?) async throws -> JobList
}

extension HighlightService {
    /// Services written for API 1.0 take the default choices only.
    public func submit(
        file: URL, targetDuration: Int, quality: Quality, choices: HighlightChoices,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID {
        guard choices.isDefault else {
            throw MomentsClientError(kind: .invalidResponse, code: "unsupported", message: "This service cannot make highlights with choices.")
        }
        return try await submit(file: file, targetDuration: targetDuration, quality: quality, progress: progress)
    }

    public func poster(job: UUID, to destination: URL) async throws -> URL {
        throw MomentsClientError(kind: .invalidResponse, code: "poster_unavailable", message: "This service has no posters.")
    }

    public func history(cursor: String?) async throws -> JobList {
        throw MomentsClientError(kind: .invalidResponse, code: "unsupported", message: "This service keeps no history.")
    }
}

extension MomentsClient: HighlightService {
    public func submit(
        file: URL, targetDuration: Int, quality: Quality,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID {
        try await submit(file: file, targetDuration: targetDuration, quality: quality, choices: HighlightChoices(), progress: progress)
    }

    public func submit(
        file: URL, targetDuration: Int, quality: Quality, choices: HighlightChoices,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID {
        try await upload(file: file, targetDuration: targetDuration, quality: quality, choices: choices) { transfer in
            if let fraction = transfer.fraction { progress(fraction) }
        }.jobID
    }

    public func poster(job: UUID, to destination: URL) async throws -> URL {
        try await poster(of: job, to: destination)
    }

    public func history(cursor: String?) async throws -> JobList {
        try await jobs(limit: 20, cursor: cursor)
    }

    public func updates(of job: UUID) -> AsyncThrowingStream<JobStatusReport, any Error> {
        updates(of: job, pollInterval: .seconds(2))
    }

    public func download(job: UUID, to destination: URL) async throws -> URL {
        try await download(job, to: destination, progress: nil)
    }

    public func cancel(job: UUID) async throws {
        try await cancel(job)
    }
}

/// One highlight from a video the user picked: upload, processing, the finished file. For a
/// SwiftUI view: hold it in `@State`, switch over `state`, call the intents from buttons.
///
/// ```swift
/// struct HighlightView: View {
///     @State private var model = HighlightViewModel(service: MomentsClient(baseURL: server, token: token))
///     let video: URL
///     var body: some View {
///         switch model.state {
///         case .idle: Button("Make a highlight") { model.start(file: video) }
///         case .uploading(let progress): ProgressView("Uploading", value: progress)
///         case .processing(let progress, let message): ProgressView(message, value: Double(progress), total: 100)
///         case .completed(let file): VideoPlayer(player: AVPlayer(url: file))
///         case .failed(let message): Text(message); Button("Try again") { model.reset() }
///         case .cancelled: Button("Start over") { model.reset() }
///         }
///         if case .loaded(let poster) = model.poster { AsyncImage(url: poster) }
///     }
/// }
/// ```
///
/// `history` lists the device's earlier highlights (`loadHistory()`, then `loadMoreHistory()` at
/// the end of the list).
@MainActor
@Observable
public final class HighlightViewModel {
    public enum State: Equatable, Sendable {
        case idle
        /// 0…1 of the video sent.
        case uploading(progress: Double)
        /// The server's progress (0–100) and its sentence for the user.
        case processing(progress: Int, message: String)
        /// The highlight, downloaded to this file.
        case completed(URL)
        /// A sentence to show as it is (the server's own when it sent one).
        case failed(String)
        case cancelled
    }

    /// The finished highlight's poster (API 1.1), fetched once it completed.
    public enum PosterState: Equatable, Sendable {
        case none
        case loading
        /// The poster JPEG, downloaded to this file.
        case loaded(URL)
        /// A sentence: why there is none (an older server, an older highlight).
        case unavailable(String)
    }

    /// The device's earlier highlights, newest first (API 1.1).
    public enum HistoryState: Equatable, Sendable {
        case notLoaded
        case loading
        /// The jobs so far, and whether `loadMoreHistory()` has more.
        case loaded([JobStatusReport], hasMore: Bool)
        case failed(String)
    }

    public private(set) var state: State = .idle
    public private(set) var poster: PosterState = .none
    public private(set) var history: HistoryState = .notLoaded
    @ObservationIgnored private var historyCursor: String?
    /// The job on the server, once the upload was accepted.
    public private(set) var jobID: UUID?
    /// The server's details of the finished job (segments, length), when it completed.
    public private(set) var lastStatus: JobStatusReport?

    @ObservationIgnored private let service: any HighlightService
    @ObservationIgnored private let downloadFolder: URL
    @ObservationIgnored private var work: Task<Void, Never>?
    /// Counts `start`s; a run whose number is not the current one was cancelled or reset.
    @ObservationIgnored private var generation = 0

    public init(service: any HighlightService, downloadFolder: URL = FileManager.default.temporaryDirectory) {
        self.service = service
        self.downloadFolder = downloadFolder
    }

    /// Whether `cancel()` does anything now.
    public var canCancel: Bool {
        switch state {
        case .uploading, .processing: true
        default: false
        }
    }

    /// Uploads `file` and follows the job to the downloaded highlight (and its poster). Ignored
    /// while one is running. `choices` (API 1.1): segment lengths and count, and the frame's shape.
    public func start(file: URL, duration: Int = 30, quality: Quality = .high, choices: HighlightChoices = HighlightChoices()) {
        guard work == nil else { return }
        generation += 1
        let run = generation
        state = .uploading(progress: 0)
        poster = .none
        let service = self.service, folder = downloadFolder
        let progress: @Sendable (Double) -> Void = { [weak self] fraction in
            Task { @MainActor in self?.apply(run) { if case .uploading = $0.state { $0.state = .uploading(progress: fraction) } } }
        }
        work = Task { [weak self] in
            do {
                let id = try await service.submit(file: file, targetDuration: duration, quality: quality, choices: choices, progress: progress)
                if Task.isCancelled {
                    // Cancelled while the last bytes went out: the server has the job, so cancel it there.
                    try? await service.cancel(job: id)
                    return
                }
                self?.apply(run) {
                    $0.jobID = id
                    $0.state = .processing(progress: 0, message: "Waiting for a worker")
                }
                var final: JobStatusReport?
                for try await report in service.updates(of: id) {
                    final = report
                    self?.apply(run) {
                        $0.lastStatus = report
                        if !report.status.isTerminal { $0.state = .processing(progress: report.progress, message: report.message ?? "") }
                    }
                }
                // A stream ended by cancel() says nothing about the job.
                try Task.checkCancellation()
                let end: State
                switch final?.status {
                case .completed:
                    end = .completed(
                        try await service.download(job: id, to: folder.appendingPathComponent("highlight-\(id.uuidString.lowercased()).mp4")))
                case .failed:
                    end = .failed(final?.message ?? "The highlight could not be made.")
                case .cancelled:
                    end = .cancelled
                default:
                    end = .failed("The server stopped reporting on this video. Try again.")
                }
                self?.apply(run) {
                    $0.finish(end)
                    if case .completed = end { $0.poster = .loading }
                }
                guard case .completed = end else { return }
                let poster: PosterState
                do {
                    poster = .loaded(try await service.poster(job: id, to: folder.appendingPathComponent("poster-\(id.uuidString.lowercased()).jpg")))
                } catch {
                    poster = .unavailable((error as? MomentsClientError)?.message ?? "The poster could not be fetched.")
                }
                self?.apply(run) { $0.poster = poster }
            } catch {
                self?.apply(run) { $0.fail(error) }
            }
        }
    }

    /// Loads the first page of the device's highlights (again, from the top).
    public func loadHistory() async {
        historyCursor = nil
        history = .loading
        await loadHistoryPage(after: [])
    }

    /// Appends the next page, when there is one.
    public func loadMoreHistory() async {
        guard case .loaded(let jobs, true) = history else { return }
        await loadHistoryPage(after: jobs)
    }

    private func loadHistoryPage(after earlier: [JobStatusReport]) async {
        do {
            let page = try await service.history(cursor: historyCursor)
            historyCursor = page.nextCursor
            history = .loaded(earlier + page.jobs, hasMore: page.nextCursor != nil)
        } catch {
            history = .failed((error as? MomentsClientError)?.message ?? "The history could not be loaded: \(error.localizedDescription)")
        }
    }

    /// Changes state for run `run` only: a run that was cancelled or reset changes nothing.
    private func apply(_ run: Int, _ change: (HighlightViewModel) -> Void) {
        guard run == generation else { return }
        change(self)
    }

    /// Stops the upload, or asks the server to cancel the job.
    public func cancel() {
        guard canCancel else { return }
        let id = jobID, service = self.service
        work?.cancel()
        work = nil
        generation += 1
        state = .cancelled
        if let id { Task { try? await service.cancel(job: id) } }
    }

    /// Back to `idle` for another video (cancels anything running).
    public func reset() {
        if canCancel { cancel() }
        work?.cancel()
        work = nil
        generation += 1
        jobID = nil
        lastStatus = nil
        poster = .none
        state = .idle
    }

    private func finish(_ end: State) {
        work = nil
        state = end
    }

    private func fail(_ error: any Error) {
        if error is CancellationError || (error as? MomentsClientError)?.kind == .cancelled { return }
        let message = (error as? MomentsClientError)?.message ?? "Something went wrong: \(error.localizedDescription)"
        finish(.failed(message))
    }
}

/// The device's plan and usage, for a settings or paywall screen.
@MainActor
@Observable
public final class AccountViewModel {
    public enum State: Equatable, Sendable {
        case loading
        case loaded(Account)
        case failed(String)
    }

    public private(set) var state: State = .loading
    @ObservationIgnored private let load: @Sendable () async throws -> Account

    public init(client: MomentsClient) {
        load = { try await client.account() }
    }

    /// For previews and tests.
    public init(load: @escaping @Sendable () async throws -> Account) {
        self.load = load
    }

    /// "Free: 3 videos/month" or "Pro: Unlimited", once loaded.
    public var planDescription: String? {
        if case .loaded(let account) = state { account.planDescription } else { nil }
    }

    /// "2 of 3 used this month", or nil for unlimited plans.
    public var usageDescription: String? {
        guard case .loaded(let account) = state, let limit = account.usage.limit else { return nil }
        return "\(account.usage.used) of \(limit) used this month"
    }

    public func refresh() async {
        do {
            state = .loaded(try await load())
        } catch {
            state = .failed((error as? MomentsClientError)?.message ?? error.localizedDescription)
        }
    }
}
