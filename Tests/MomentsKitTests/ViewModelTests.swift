import Foundation
import MomentsKit
import ServiceTestSupport
import Testing

/// A service the test drives step by step: what the app's previews and tests inject.
final class ScriptedService: HighlightService, @unchecked Sendable {
    let lock = NSLock()
    var uploadProgress: [Double] = [0.25, 0.5, 1]
    var uploadError: (any Error)?
    var reports: [JobStatusReport] = []
    var cancelled: [UUID] = []
    var downloads: [URL] = []
    /// When set, updates wait for it before finishing (so a test can cancel mid-job).
    var hold: AsyncStream<Void>?
    /// When set, the upload waits for it (so a test can cancel mid-upload); the server still gets the job.
    var uploadHold: AsyncStream<Void>?
    let jobID = UUID()

    func submit(file: URL, targetDuration: Int, quality: Quality, progress: @escaping @Sendable (Double) -> Void) async throws -> UUID {
        for fraction in lock.withLock({ uploadProgress }) { progress(fraction) }
        if let uploadHold = lock.withLock({ self.uploadHold }) {
            // Like the last bytes of a real upload: not interrupted by the task's cancellation.
            await Task.detached { for await _ in uploadHold { break } }.value
        }
        if let error = lock.withLock({ uploadError }) { throw error }
        return jobID
    }

    func updates(of job: UUID) -> AsyncThrowingStream<JobStatusReport, any Error> {
        let (reports, hold) = lock.withLock { (self.reports, self.hold) }
        return AsyncThrowingStream { continuation in
            let task = Task {
                for report in reports.dropLast() { continuation.yield(report) }
                if let hold { for await _ in hold { break } }
                if Task.isCancelled { return continuation.finish(throwing: CancellationError()) }
                if let last = reports.last { continuation.yield(last) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func download(job: UUID, to destination: URL) async throws -> URL {
        try Data("mp4".utf8).write(to: destination)
        lock.withLock { downloads.append(destination) }
        return destination
    }

    func cancel(job: UUID) async throws {
        lock.withLock { cancelled.append(job) }
    }

    var choices: [HighlightChoices] = []
    var posters: [URL] = []
    /// The history's pages, in order; each call to `history` answers the next.
    var pages: [JobList] = []
    var cursors: [String?] = []

    func submit(
        file: URL, targetDuration: Int, quality: Quality, choices: HighlightChoices,
        progress: @escaping @Sendable (Double) -> Void
    ) async throws -> UUID {
        lock.withLock { self.choices.append(choices) }
        return try await submit(file: file, targetDuration: targetDuration, quality: quality, progress: progress)
    }

    func poster(job: UUID, to destination: URL) async throws -> URL {
        try Data("jpg".utf8).write(to: destination)
        lock.withLock { posters.append(destination) }
        return destination
    }

    func history(cursor: String?) async throws -> JobList {
        try lock.withLock {
            cursors.append(cursor)
            guard !pages.isEmpty else { throw MomentsClientError(kind: .transport, code: "network_error", message: "No network.") }
            return pages.removeFirst()
        }
    }

    func report(_ status: JobStatus, _ progress: Int, _ message: String) -> JobStatusReport {
        JobStatusReport(
            jobID: jobID, status: status, progress: progress, message: message, resultURL: nil, createdAt: Date(),
            completedAt: nil, originalFilename: "IMG_0042.MOV", duration: 20, segmentsSelected: nil)
    }
}

@MainActor
@Suite("HighlightViewModel with an injected service", .quiet)
struct ViewModelTests {
    /// Waits (on the main actor, letting the model's tasks run) until `condition` holds. The model
    /// gets there in milliseconds; the timeout only bounds a failure, and is long because the
    /// whole suite starts at once on two cores (a CI run saw the first seconds of the run stall
    /// every suite for 5.5 s, and two of these waits, then 5 s, gave up before the model's tasks ran).
    func until(_ condition: () -> Bool, timeout: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return condition()
    }

    @Test("idle → uploading → processing (server progress and sentence) → completed with the downloaded file")
    func happyPath() async {
        let service = ScriptedService()
        service.reports = [
            service.report(.pending, 0, "Waiting for a worker"), service.report(.processing, 40, "Finding the best moments"),
            service.report(.processing, 90, "Rendering your highlight"), service.report(.completed, 100, "Your highlight is ready"),
        ]
        let (hold, release) = AsyncStream.makeStream(of: Void.self)
        service.hold = hold
        let model = HighlightViewModel(service: service)
        #expect(model.state == .idle && !model.canCancel)
        var seen: [HighlightViewModel.State] = []
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"), duration: 15, quality: .medium)
        seen.append(model.state)
        #expect(await until { if case .processing(90, _) = model.state { true } else { false } })
        seen.append(model.state)
        #expect(model.jobID == service.jobID && model.canCancel)
        release.yield()
        #expect(await until { if case .completed = model.state { true } else { false } })
        guard case .completed(let file) = model.state else { return }
        #expect(file.lastPathComponent == "highlight-\(service.jobID.uuidString.lowercased()).mp4")
        #expect(service.downloads == [file])
        #expect(seen == [.uploading(progress: 0), .processing(progress: 90, message: "Rendering your highlight")])
        #expect(model.lastStatus?.status == .completed && !model.canCancel)
        try? FileManager.default.removeItem(at: file)
    }

    @Test("Upload progress is published as the bytes go")
    func uploadProgress() async {
        let service = ScriptedService()
        service.uploadProgress = [0.1, 0.6]
        service.uploadError = MomentsClientError(
            kind: .server, status: 402, code: "quota_exceeded",
            message: "You have used this month's 3 free highlights.")
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"))
        // The upload then fails with the server's sentence, shown as it is.
        #expect(await until { model.state == .failed("You have used this month's 3 free highlights.") })
        #expect(model.jobID == nil)
    }

    @Test("A failed job shows the server's message")
    func failedJob() async {
        let service = ScriptedService()
        service.reports = [
            service.report(.processing, 10, "Analyzing"),
            service.report(.failed, 10, "This file is not a video we can read. Try exporting it as MP4 or MOV."),
        ]
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"))
        #expect(await until { model.state == .failed("This file is not a video we can read. Try exporting it as MP4 or MOV.") })
        #expect(service.downloads.isEmpty)
    }

    @Test("cancel() mid-job ends cancelled and asks the server to cancel; reset() goes back to idle")
    func cancelAndReset() async {
        let service = ScriptedService()
        service.reports = [service.report(.processing, 30, "Analyzing"), service.report(.completed, 100, "Done")]
        let (hold, _) = AsyncStream.makeStream(of: Void.self)
        service.hold = hold
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"))
        #expect(await until { if case .processing(30, _) = model.state { true } else { false } })
        model.cancel()
        #expect(model.state == .cancelled)
        #expect(await until { service.lock.withLock { service.cancelled } == [service.jobID] })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(model.state == .cancelled, "nothing overwrote the cancellation")
        model.reset()
        #expect(model.state == .idle && model.jobID == nil && model.lastStatus == nil)
    }

    @Test("cancel() during the upload: when the server got the job anyway, it is cancelled there; the state stays cancelled")
    func cancelDuringUpload() async {
        let service = ScriptedService()
        service.reports = [service.report(.processing, 30, "Analyzing"), service.report(.completed, 100, "Done")]
        let (uploadHold, release) = AsyncStream.makeStream(of: Void.self)
        service.uploadHold = uploadHold
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"))
        #expect(await until { model.state == .uploading(progress: 1) })
        model.cancel()
        #expect(model.state == .cancelled)
        release.yield()
        #expect(await until { service.lock.withLock { service.cancelled } == [service.jobID] })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(model.state == .cancelled && model.jobID == nil && service.downloads.isEmpty)
    }

    @Test("start() while a highlight is running is ignored")
    func startTwice() async {
        let service = ScriptedService()
        service.reports = [service.report(.processing, 30, "Analyzing"), service.report(.completed, 100, "Done")]
        let (hold, release) = AsyncStream.makeStream(of: Void.self)
        service.hold = hold
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/a.mov"))
        #expect(await until { if case .processing = model.state { true } else { false } })
        model.start(file: URL(fileURLWithPath: "/tmp/b.mov"))
        #expect(model.jobID == service.jobID)
        release.yield()
        #expect(await until { if case .completed = model.state { true } else { false } })
        #expect(service.downloads.count == 1)
        service.downloads.forEach { try? FileManager.default.removeItem(at: $0) }
    }

    @Test("AccountViewModel: plan and usage sentences, and the server's message on failure")
    func account() async {
        let account = Account(
            deviceID: UUID(), name: "Anna's iPhone", plan: .free, planDescription: "Free: 3 videos/month",
            usage: .init(used: 2, limit: 3, remaining: 1, periodStart: Date(), resetsAt: Date()), createdAt: Date())
        let model = AccountViewModel(load: { account })
        #expect(model.state == .loading && model.planDescription == nil)
        await model.refresh()
        #expect(model.planDescription == "Free: 3 videos/month" && model.usageDescription == "2 of 3 used this month")
        let failing = AccountViewModel(load: {
            throw MomentsClientError(kind: .server, status: 401, code: "invalid_token", message: "This token is not valid.")
        })
        await failing.refresh()
        #expect(failing.state == .failed("This token is not valid."))
    }

    @Test("completed → the poster loads after the highlight; choices reach the service")
    func posterAndChoices() async throws {
        let service = ScriptedService()
        service.reports = [service.report(.processing, 50, "Rendering"), service.report(.completed, 100, "Your highlight is ready")]
        let model = HighlightViewModel(service: service)
        #expect(model.poster == .none)
        let choices = HighlightChoices(maxSegment: 4, maxSegments: 5, aspect: .portrait)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"), duration: 20, choices: choices)
        #expect(await until({ if case .loaded = model.poster { true } else { false } }, timeout: .seconds(60)))
        if case .completed = model.state {} else { Issue.record("completed first: \(model.state)") }
        let poster = try #require(service.posters.first)
        #expect(model.poster == .loaded(poster) && service.choices == [choices])
        model.reset()
        #expect(model.poster == .none)
        (service.downloads + service.posters).forEach { try? FileManager.default.removeItem(at: $0) }
    }

    @Test("a service without posters (API 1.0): the highlight completes, the poster is unavailable with a sentence")
    func noPoster() async {
        final class OldService: HighlightService, @unchecked Sendable {
            let inner = ScriptedService()
            func submit(file: URL, targetDuration: Int, quality: Quality, progress: @escaping @Sendable (Double) -> Void) async throws -> UUID {
                try await inner.submit(file: file, targetDuration: targetDuration, quality: quality, progress: progress)
            }
            func updates(of job: UUID) -> AsyncThrowingStream<JobStatusReport, any Error> { inner.updates(of: job) }
            func download(job: UUID, to destination: URL) async throws -> URL { try await inner.download(job: job, to: destination) }
            func cancel(job: UUID) async throws { try await inner.cancel(job: job) }
        }
        let service = OldService()
        service.inner.reports = [service.inner.report(.completed, 100, "Done")]
        let model = HighlightViewModel(service: service)
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"))
        #expect(await until({ if case .unavailable = model.poster { true } else { false } }, timeout: .seconds(60)))
        if case .completed = model.state {} else { Issue.record("\(model.state)") }
        model.reset()
        model.start(file: URL(fileURLWithPath: "/tmp/clip.mov"), choices: HighlightChoices(aspect: .square))
        #expect(
            await until({ if case .failed = model.state { true } else { false } }, timeout: .seconds(60)),
            "choices an old service cannot honour fail, never silently dropped")
        service.inner.downloads.forEach { try? FileManager.default.removeItem(at: $0) }
    }

    @Test("history: the first page, then more by cursor until the last; a failure says why")
    func history() async {
        let service = ScriptedService()
        let older = service.report(.completed, 100, "Ready"), newer = service.report(.failed, 30, "Not a video")
        service.pages = [JobList(jobs: [newer], nextCursor: "c1"), JobList(jobs: [older], nextCursor: nil)]
        let model = HighlightViewModel(service: service)
        #expect(model.history == .notLoaded)
        await model.loadHistory()
        #expect(model.history == .loaded([newer], hasMore: true))
        await model.loadMoreHistory()
        #expect(model.history == .loaded([newer, older], hasMore: false))
        await model.loadMoreHistory()
        #expect(service.cursors == [nil, "c1"], "no call past the last page")
        await model.loadHistory()
        #expect(model.history == .failed("No network."))
    }
}
