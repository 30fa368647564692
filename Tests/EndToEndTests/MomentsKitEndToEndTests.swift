import Foundation
import MomentsKit
import ServiceTestSupport
import Testing

/// MomentsKit against real `moments api` and `moments worker` processes, PostgreSQL, Redis and
/// SeaweedFS: what the iOS app will do, on Linux's URLSession.
@Suite("MomentsKit against the real server", .heavy)
struct MomentsKitEndToEndTests {
    /// Collects progress calls from URLSession's delegate threads.
    final class Progress: @unchecked Sendable {
        let lock = NSLock()
        var values: [TransferProgress] = []
        func add(_ value: TransferProgress) { lock.withLock { values.append(value) } }
        var all: [TransferProgress] { lock.withLock { values } }
    }

    @Test("Register, plan, formats, multipart upload with progress, status by events, details, download with progress")
    func wholeJourney() async throws {
        // No worker until the app follows the job: then its updates must show the wait and the work,
        // however fast the work is.
        try await LiveSystem.withRunningSystem(workers: 0, settings: ["AUTH_REQUIRED": "true"]) { system in
            var client = MomentsClient(baseURL: URL(string: system.base)!)
            let anonymous = await #expect(throws: MomentsClientError.self) { try await client.account() }
            #expect(anonymous?.status == 401 && anonymous?.code == "auth_required" && anonymous?.kind == .server)

            let registration = try await client.registerDevice(name: "Test iPhone")
            #expect(registration.token.hasPrefix("mdt_") && registration.plan == .free)
            client.token = registration.token
            let account = try await client.account()
            #expect(account.deviceID == registration.deviceID && account.name == "Test iPhone")
            #expect(account.planDescription == "Free: 3 videos/month" && account.usage.used == 0 && account.usage.limit == 3)
            let formats = try await client.formats()
            #expect(formats.extensions.contains("mov") && formats.targetDuration.default == 30 && formats.qualities.contains("low"))

            let sent = Progress()
            let metadata = ["album": "Summer 2026", "draft": "7"]
            let accepted = try await client.upload(
                file: URL(fileURLWithPath: TestFootage.twentySeconds), targetDuration: 8,
                quality: .low, metadata: metadata
            ) { sent.add($0) }
            #expect(accepted.message == "Video uploaded, processing started")
            let bytes = sent.all
            #expect(!bytes.isEmpty && bytes.map(\.bytes) == bytes.map(\.bytes).sorted(), "upload progress only grows")
            #expect(bytes.last?.fraction == 1, "\(bytes.last.map(String.init(describing:)) ?? "none")")

            var reports: [JobStatusReport] = []
            for try await report in client.updates(of: accepted.jobID, pollInterval: .milliseconds(500)) {
                if reports.isEmpty {
                    #expect(report.status == .pending)
                    try system.startWorker()
                }
                reports.append(report)
            }
            #expect(reports.last?.status == .completed, "\(reports.map(\.status))")
            #expect(reports.map(\.progress) == reports.map(\.progress).sorted(), "progress never goes backwards")
            #expect(reports.count >= 2, "changes arrive as they happen, not only the end")
            #expect(reports.allSatisfy { $0.metadata == metadata }, "the app's metadata in every event")

            let details = try await client.details(of: accepted.jobID)
            #expect(details.report.status == .completed && details.quality == .low && details.targetDuration == 8)
            #expect((details.segments?.count ?? 0) == details.report.segmentsSelected)
            #expect(details.report.metadata == metadata)

            let received = Progress()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-kit-\(accepted.jobID).mp4")
            defer { try? FileManager.default.removeItem(at: file) }
            try await client.download(accepted.jobID, to: file) { received.add($0) }
            #expect(abs(try TestFootage.duration(file.path) - 8) <= 0.5)
            let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value
            #expect(received.all.last?.bytes == size, "download progress reaches the file's size")

            // Playback links need no token and serve ranges: presigned storage URLs here (S3).
            let links = try await client.playback(of: accepted.jobID)
            #expect(links.expiresAt.timeIntervalSinceNow > 3500 && links.posterURL != nil && links.thumbnailsURL != nil, "\(links)")
            let downloaded = try Data(contentsOf: file)
            #expect(try curl(["-r", "100-1099", links.playbackURL]).status == 206)
            let raw = try captured("/usr/bin/curl", ["-s", "-r", "100-1099", links.playbackURL]).output
            #expect(raw == downloaded[100...1099], "the bytes asked for, \(raw.count) of them")
            let whole = try captured("/usr/bin/curl", ["-s", "-f", links.playbackURL]).output
            #expect(whole == downloaded, "the whole highlight, without the token")
            let forged = links.playbackURL.replacingOccurrences(of: "X-Amz-Signature=", with: "X-Amz-Signature=0")
            #expect(try curl([forged]).status == 403, "storage refuses a changed signature")
            let early = await #expect(throws: MomentsClientError.self) { try await client.playback(of: UUID()) }
            #expect(early?.code == "job_not_found")
            #expect(try await client.account().usage.used == 1)
            let history = try await client.jobs(statuses: [.completed], limit: 5)
            #expect(history.jobs.map(\.jobID) == [accepted.jobID] && history.jobs.first?.resultURL != nil && history.nextCursor == nil)
            #expect(history.jobs.first?.metadata == metadata)
            #expect(try await client.jobs(statuses: [.failed]).jobs.isEmpty)
        }
    }

    @Test("Direct upload above the threshold (presigned PUT to storage, then start); cancel; typed errors")
    func directUploadCancelAndErrors() async throws {
        try await LiveSystem.withSystem(workers: 0) { base in
            let client = MomentsClient(baseURL: URL(string: base)!, directUploadThreshold: 0)
            let sent = Progress()
            let accepted = try await client.upload(
                file: URL(fileURLWithPath: TestFootage.twentySeconds), targetDuration: 10,
                quality: .medium, metadata: ["user": "42"]
            ) { sent.add($0) }
            let size = (try FileManager.default.attributesOfItem(atPath: TestFootage.twentySeconds)[.size] as? NSNumber)?.int64Value
            #expect(sent.all.last?.bytes == size, "the file itself went to storage, not a multipart body")
            let details = try await client.details(of: accepted.jobID)
            #expect(details.report.status == .pending && details.targetDuration == 10 && details.quality == .medium)
            #expect(details.sourceSize == size && details.report.metadata == ["user": "42"])
            // Metadata the server would refuse is refused before a byte is sent, with the server's code.
            let tooMuch = await #expect(throws: MomentsClientError.self) {
                try await client.upload(
                    file: URL(fileURLWithPath: TestFootage.twentySeconds), metadata: ["note": String(repeating: "a", count: 1100)])
            }
            #expect(tooMuch?.code == "invalid_metadata" && tooMuch?.errorCode == .invalidMetadata && tooMuch?.kind == .invalidRequest)

            let cancelled = try await client.cancel(accepted.jobID)
            #expect(cancelled.status == .cancelled)
            let again = await #expect(throws: MomentsClientError.self) { try await client.cancel(accepted.jobID) }
            #expect(again?.status == 409 && again?.code == "already_finished" && again?.message.isEmpty == false)
            let notReady = await #expect(throws: MomentsClientError.self) {
                try await client.download(accepted.jobID, to: FileManager.default.temporaryDirectory.appendingPathComponent("never.mp4"))
            }
            #expect(notReady?.code == "not_ready")
            #expect(!FileManager.default.fileExists(atPath: FileManager.default.temporaryDirectory.appendingPathComponent("never.mp4").path))
            let unknown = await #expect(throws: MomentsClientError.self) { try await client.status(of: UUID()) }
            #expect(unknown?.status == 404 && unknown?.code == "job_not_found")

            let notVideo = FileManager.default.temporaryDirectory.appendingPathComponent("moments-kit-\(UUID()).mov")
            try Data("a shopping list, not a video".utf8).write(to: notVideo)
            defer { try? FileManager.default.removeItem(at: notVideo) }
            let multipart = MomentsClient(baseURL: URL(string: base)!)
            let refused = await #expect(throws: MomentsClientError.self) { try await multipart.upload(file: notVideo) }
            #expect(refused?.status == 415 && refused?.code == "not_a_video")

            let missing = await #expect(throws: MomentsClientError.self) {
                try await multipart.upload(file: URL(fileURLWithPath: "/nonexistent/clip.mov"))
            }
            #expect(missing?.kind == .file)
        }
        let nowhere = MomentsClient(baseURL: URL(string: "http://127.0.0.1:9")!, maxAttempts: 2)
        let down = await #expect(throws: MomentsClientError.self) { try await nowhere.formats() }
        #expect(down?.kind == .transport && down?.isTransient == true)
    }

    @Test(
        "A track of the app's own through MomentsKit: in the form, or PUT to its own presigned URL (direct, and resumable after a relaunch); a text file refused 415 either way"
    )
    func ownMusic() async throws {
        try await LiveSystem.withSystem(workers: 1) { base in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-kit-music-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // 20 s of a chord under a click every half second.
            let track = folder.appendingPathComponent("our song.m4a")
            let made = try captured(
                "/usr/bin/ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i",
                    "aevalsrc=0.4*lt(mod(t\\,0.5)\\,0.02)*sin(2*PI*1000*t)+0.1*sin(2*PI*220*t):s=44100:d=20",
                    "-c:a", "aac", track.path,
                ])
            #expect(made.status == 0, "\(String(decoding: made.errors, as: UTF8.self))")
            let notes = folder.appendingPathComponent("notes.mp3")
            try Data("la la la".utf8).write(to: notes)
            let video = URL(fileURLWithPath: TestFootage.twentySeconds)

            let direct = MomentsClient(baseURL: URL(string: base)!, directUploadThreshold: 0)
            let multipart = MomentsClient(baseURL: URL(string: base)!)
            for client in [direct, multipart] {
                let refused = await #expect(throws: MomentsClientError.self) {
                    try await client.upload(file: video, targetDuration: 8, musicFile: notes)
                }
                #expect(refused?.status == 415 && refused?.code == "not_audio", "\(String(describing: refused))")
            }
            let both = await #expect(throws: MomentsClientError.self) {
                try await direct.upload(file: video, music: MusicChoice(trackID: UUID()), musicFile: track)
            }
            #expect(both?.kind == .invalidRequest && both?.code == "invalid_music_id", "\(String(describing: both))")

            let viaForm = try await multipart.upload(
                file: video, targetDuration: 8, music: MusicChoice(trackID: nil, volume: -3),
                musicFile: track)
            let viaStorage = try await direct.upload(
                file: video, targetDuration: 8,
                music: MusicChoice(trackID: nil, keepSourceAudio: false), musicFile: track)
            // Resumable, stopped after its first part (the track not sent yet) and resumed: the
            // parts' answer gives the track a fresh URL.
            let options = ResumableUploadOptions(stateDirectory: folder, stopAfterParts: 1)
            let large = URL(fileURLWithPath: TestFootage.large)
            let stopped = await #expect(throws: MomentsClientError.self) {
                try await direct.resumableUpload(file: large, targetDuration: 8, quality: .low, musicFile: track, options: options)
            }
            #expect(stopped?.code == "suspended")
            var resume = options
            resume.stopAfterParts = nil
            let resumed = try await direct.resumableUpload(file: large, targetDuration: 8, quality: .low, musicFile: track, options: resume)
            for (job, volume, kept) in [(viaForm.jobID, -3.0, true), (viaStorage.jobID, -6.0, false), (resumed.jobID, -6.0, true)] {
                let finished = try await TestServices.eventually(timeout: .seconds(240)) {
                    let status = try await direct.status(of: job).status
                    return status == .completed || status == .failed
                }
                let details = try await direct.details(of: job)
                #expect(finished && details.report.status == .completed, "\(details.report)")
                #expect(
                    details.music?.filename == "our song.m4a" && details.music?.trackID == nil
                        && details.music?.volume == volume && details.music?.keepSourceAudio == kept, "\(String(describing: details.music))")
                let output = folder.appendingPathComponent("\(job).mp4")
                try await direct.download(job, to: output)
                #expect(abs(try TestFootage.duration(output.path) - 8) <= 0.5)
            }
        }
    }

    @Test("HighlightViewModel on the real server: uploading, processing with the server's sentences, the downloaded highlight")
    @MainActor
    func viewModel() async throws {
        try await LiveSystem.withSystem(workers: 1) { base in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-kit-vm-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let model = await HighlightViewModel(service: MomentsClient(baseURL: URL(string: base)!), downloadFolder: folder)
            await model.start(file: URL(fileURLWithPath: TestFootage.twentySeconds), duration: 8, quality: .low)
            var messages: Set<String> = []
            let deadline = ContinuousClock.now + .seconds(90)
            while ContinuousClock.now < deadline {
                let state = await model.state
                if case .processing(_, let message) = state { messages.insert(message) }
                if case .completed = state { break }
                if case .failed(let message) = state { Issue.record("failed: \(message)"); return }
                try await Task.sleep(for: .milliseconds(20))
            }
            guard case .completed(let file) = await model.state else {
                Issue.record("not completed: \(await model.state)")
                return
            }
            #expect(abs(try TestFootage.duration(file.path) - 8) <= 0.5)
            #expect(!messages.isEmpty, "the server's sentences were shown while processing")
            let posterDeadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < posterDeadline {
                let poster = await model.poster
                if poster != .loading && poster != .none { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            guard case .loaded(let poster) = await model.poster else {
                Issue.record("no poster: \(await model.poster)")
                return
            }
            #expect(Array(try Data(contentsOf: poster).prefix(2)) == [0xFF, 0xD8], "a JPEG")
            await model.loadHistory()
            if case .loaded(let jobs, false) = await model.history {
                #expect(jobs.map(\.jobID) == [await model.jobID].compactMap { $0 } && jobs.first?.posterURL != nil)
            } else {
                Issue.record("history: \(await model.history)")
            }
        }
    }

    @Test(
        "API 1.1 through MomentsKit: choices, poster, thumbnails, timeline; a resumable upload stopped half-way and resumed over background-session transport"
    )
    func apiOneOne() async throws {
        try await LiveSystem.withSystem(workers: 1, settings: ["UPLOAD_PART_MIB": "5"]) { base in
            let client = MomentsClient(baseURL: URL(string: base)!)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-kit-11-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }

            let options = ResumableUploadOptions(
                stateDirectory: folder, transport: .background(identifier: "moments-test-\(UUID())"),
                stopAfterParts: 2)
            let file = URL(fileURLWithPath: TestFootage.large)
            let choices = HighlightChoices(minSegment: 2, maxSegment: 4, aspect: .square, fps: .source)
            let stopped = await #expect(throws: MomentsClientError.self) {
                try await client.resumableUpload(file: file, targetDuration: 8, quality: .low, choices: choices, options: options)
            }
            #expect(stopped?.code == "suspended")
            let pending = MomentsClient.pendingResumableUploads(in: folder)
            let job = try #require(pending.first?.jobID, "the state names the job: \(pending)")
            let sent = Progress()
            var resume = options
            resume.stopAfterParts = nil
            let accepted = try await client.resumableUpload(
                file: file, targetDuration: 8, quality: .low, choices: choices,
                options: resume
            ) { sent.add($0) }
            #expect(accepted.jobID == job && MomentsClient.pendingResumableUploads(in: folder).isEmpty)
            let first = try #require(sent.all.first)
            #expect(first.bytes == Int64(2 * (5 << 20)), "resumed after the two parts the server had: \(first)")

            var reports: [JobStatusReport] = []
            for try await report in client.updates(of: job, pollInterval: .milliseconds(500)) { reports.append(report) }
            let done = try #require(reports.last)
            #expect(done.status == .completed && done.posterURL != nil, "\(done)")
            let details = try await client.details(of: job)
            #expect(details.choices == choices)
            let poster = try await client.poster(of: job, to: folder.appendingPathComponent("poster.jpg"))
            let size = try TestFootage.pictureSize(poster.path)
            #expect(size.width == 360 && size.height == 360, "1:1 at the source's height: \(size)")
            let strip = try await client.thumbnails(of: job, to: folder.appendingPathComponent("strip.jpg"))
            #expect(try TestFootage.pictureSize(strip.path).height == 180)
            let otio = try await client.timeline(of: job, format: "otio")
            #expect(otio.contains("\"OTIO_SCHEMA\" : \"Timeline.1\"") || otio.contains("\"OTIO_SCHEMA\":\"Timeline.1\""), "\(otio.prefix(200))")
            let wrong = await #expect(throws: MomentsClientError.self) { try await client.timeline(of: job, format: "aaf") }
            #expect(wrong?.code == "invalid_format")
        }
    }
}
