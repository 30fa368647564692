import ArgumentParser
import Foundation
import MomentsContract
import MomentsKit
import Synchronization

/// Where the server is and who we are to it: `--server` (or `MOMENTS_SERVER`, default
/// http://localhost:8000) and `--token` (or `MOMENTS_TOKEN`, or the token this machine registered
/// with that server before, kept in `~/.config/moments/credentials.json`).
struct ServerOptions: ParsableArguments {
    @Option(help: "The Moments server (default: $MOMENTS_SERVER or http://localhost:8000).")
    var server: String?

    @Option(help: "A device token (default: $MOMENTS_TOKEN, or the one saved for this server; registered when there is none).")
    var token: String?

    var serverURL: URL {
        get throws {
            let text = server ?? ProcessInfo.processInfo.environment["MOMENTS_SERVER"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://localhost:8000"
            guard let url = URL(string: text.hasSuffix("/") ? String(text.dropLast()) : text), ["http", "https"].contains(url.scheme ?? ""),
                  url.host != nil else {
                throw ValidationError("--server must be an http:// or https:// URL, not '\(text)'.")
            }
            return url
        }
    }

    /// A client with a token: given, from the environment, saved, or registered now (and saved).
    func client(register: Bool = true) async throws -> MomentsClient {
        let url = try serverURL
        var client = MomentsClient(baseURL: url)
        if let token = token ?? ProcessInfo.processInfo.environment["MOMENTS_TOKEN"].flatMap({ $0.isEmpty ? nil : $0 }) {
            client.token = token
        } else if let saved = Credentials.token(for: url) {
            client.token = saved
        } else if register {
            let registration = try await client.registerDevice(name: "moments CLI on \(ProcessInfo.processInfo.hostName)")
            client.token = registration.token
            Credentials.save(registration.token, for: url)
        }
        return client
    }
}

/// Device tokens this machine registered, per server, readable by this user only.
enum Credentials {
    static var file: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        return base.appendingPathComponent("moments/credentials.json")
    }

    static func token(for server: URL) -> String? {
        guard let data = try? Data(contentsOf: file), let tokens = try? JSONDecoder().decode([String: String].self, from: data) else { return nil }
        return tokens[server.absoluteString]
    }

    static func save(_ token: String, for server: URL) {
        var tokens = (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        tokens[server.absoluteString] = token
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try JSONEncoder().encode(tokens).write(to: file, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            FileHandle.standardError.write(Data("warning: could not save the device token in \(file.path): \(error.localizedDescription)\n".utf8))
        }
    }
}

/// Runs `body`; a `MomentsClientError` becomes `error: <code>: <the server's sentence>` and exit status 1.
func reportingClientErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MomentsClientError {
        FileHandle.standardError.write(Data("error: \(error.code): \(error.message)\n".utf8))
        throw ExitCode(1)
    }
}

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Uploads a video to a Moments server and, with --wait, follows it to the downloaded highlight.",
        discussion: """
            Shows the upload (bytes, rate, time left), then the server's progress and sentence, then the download. \
            Ctrl-C while waiting asks whether to cancel the job on the server (without a terminal, the job is left running). \
            Exits 1 with the server's message when the job fails.
            """)

    @Argument(help: "The video to upload.")
    var file: String

    @OptionGroup var options: ServerOptions

    @Option(help: "Length of the highlight in seconds.")
    var duration: Int = 30

    @Option(help: "high, medium or low.")
    var quality: Quality = .high
    @Option(help: "auto (copy the video's own H.264/HEVC where possible) or h264 (always H.264).")
    var codec: VideoCodecChoice = .auto

    @Flag(help: "Wait for the highlight and download it.")
    var wait = false

    @Option(name: .shortAndLong, help: "Where to save the highlight (implies --wait; default: highlight-<job id>.mp4).")
    var output: String?

    func run() async throws {
        try await reportingClientErrors {
            let source = URL(fileURLWithPath: file)
            guard FileManager.default.isReadableFile(atPath: source.path) else {
                throw ValidationError("Cannot read \(file).")
            }
            let client = try await options.client()
            let bar = TransferBar(label: "Uploading")
            let accepted = try await client.upload(file: source, targetDuration: duration, quality: quality, codec: codec) { bar.show($0) }
            bar.finish()
            print("job \(accepted.jobID.uuidString.lowercased()): \(accepted.message)")
            guard wait || output != nil else {
                print("follow it with: moments status \(accepted.jobID.uuidString.lowercased()) --wait")
                return
            }
            let destination = URL(fileURLWithPath: output ?? "highlight-\(accepted.jobID.uuidString.lowercased()).mp4")
            try await StatusCommand.follow(accepted.jobID, client: client, download: destination)
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Shows a job's status on a Moments server; --wait follows it to the end.")

    @Argument(help: "The job id.")
    var id: String

    @OptionGroup var options: ServerOptions

    @Flag(help: "Follow the job until it ends.")
    var wait = false

    @Flag(help: "Print the job's details as JSON.")
    var json = false

    func run() async throws {
        try await reportingClientErrors {
            guard let job = UUID(uuidString: id) else { throw ValidationError("'\(id)' is not a job id.") }
            let client = try await options.client(register: false)
            if wait {
                try await Self.follow(job, client: client, download: nil)
            } else if json {
                print(String(decoding: try MomentsJSON.encoder.encode(try await client.details(of: job)), as: UTF8.self))
            } else {
                let details = try await client.details(of: job)
                let report = details.report
                print("\(report.status.rawValue) \(report.progress)% \(report.message ?? "")")
                if let stage = details.stage { print("stage: \(stage)") }
                if let url = report.resultURL { print("result: \(url)") }
                if let code = details.errorCode { print("error: \(code)") }
            }
        }
    }

    /// Shows the job's progress until it ends; downloads the highlight to `download` when it completes.
    /// Ctrl-C asks whether to cancel the job (on a terminal).
    static func follow(_ job: UUID, client: MomentsClient, download destination: URL?) async throws {
        let interrupt = Interrupt()
        defer { interrupt.restore() }
        let bar = TransferBar(label: "Processing")
        let watcher = Task { () throws -> JobStatusReport? in
            var last: JobStatusReport?
            for try await report in client.updates(of: job, pollInterval: .seconds(1)) {
                last = report
                bar.showPercent(report.progress, note: report.message ?? report.status.rawValue)
            }
            return last
        }
        let outcome = await interrupt.race(watcher)
        bar.finish()
        guard case .finished(let result) = outcome else {
            watcher.cancel()
            let id = job.uuidString.lowercased()
            if Interrupt.askToCancel() {
                let report = try await client.cancel(job)
                FileHandle.standardError.write(Data("job \(id) \(report.status.rawValue)\n".utf8))
            } else {
                FileHandle.standardError.write(Data("job \(id) keeps running; follow it with: moments status \(id) --wait\n".utf8))
            }
            throw ExitCode(130)
        }
        guard let report = try result.get() else { throw MomentsClientError(kind: .invalidResponse, code: "invalid_response", message: "No status arrived.") }
        switch report.status {
        case .completed:
            print("completed: \(report.message ?? "")")
            guard let destination else { return }
            let bar = TransferBar(label: "Downloading")
            try await client.download(job, to: destination) { bar.show($0) }
            bar.finish()
            print("highlight saved to \(destination.path)")
        case .failed, .cancelled:
            FileHandle.standardError.write(Data("error: \(report.status.rawValue): \(report.message ?? "The job ended without a highlight.")\n".utf8))
            throw ExitCode(1)
        case .pending, .processing:
            throw MomentsClientError(kind: .invalidResponse, code: "invalid_response", message: "The status stream ended before the job did.")
        }
    }
}

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", abstract: "Downloads a completed job's highlight.")

    @Argument(help: "The job id.")
    var id: String

    @OptionGroup var options: ServerOptions

    @Option(name: .shortAndLong, help: "Where to save it (default: highlight-<job id>.mp4).")
    var output: String?

    func run() async throws {
        try await reportingClientErrors {
            guard let job = UUID(uuidString: id) else { throw ValidationError("'\(id)' is not a job id.") }
            let client = try await options.client(register: false)
            let destination = URL(fileURLWithPath: output ?? "highlight-\(job.uuidString.lowercased()).mp4")
            let bar = TransferBar(label: "Downloading")
            try await client.download(job, to: destination) { bar.show($0) }
            bar.finish()
            print("highlight saved to \(destination.path)")
        }
    }
}

/// A progress line on standard error: live on a terminal (bytes, rate, time left), a line per 10 % otherwise.
final class TransferBar: Sendable {
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let state = Mutex<(started: ContinuousClock.Instant, lastDraw: ContinuousClock.Instant?, lastDecile: Int, drawn: Bool)>(
        (ContinuousClock.now, nil, -1, false))

    init(label: String) { self.label = label }

    func show(_ progress: TransferProgress) {
        let percent = progress.fraction.map { Int(($0 * 100).rounded(.down)) }
        let elapsed = state.withLock { (ContinuousClock.now - $0.started).inSeconds }
        let rate = elapsed > 0 ? Double(progress.bytes) / elapsed : 0
        var note = "\(Self.megabytes(progress.bytes))"
        if let total = progress.total { note += " / \(Self.megabytes(total))" }
        if rate > 0 { note += "  \(Self.megabytes(Int64(rate)))/s" }
        if let total = progress.total, rate > 0, progress.bytes < total {
            note += "  \(Int((Double(total - progress.bytes) / rate).rounded(.up))) s left"
        }
        draw(percent ?? 0, note, force: progress.total.map { progress.bytes >= $0 } ?? false)
    }

    func showPercent(_ percent: Int, note: String) { draw(percent, note, force: false) }

    private func draw(_ percent: Int, _ note: String, force: Bool) {
        state.withLock { state in
            let now = ContinuousClock.now
            if isTerminal {
                // At most ten redraws a second.
                if !force, let last = state.lastDraw, now - last < .milliseconds(100) { return }
                let bar = ProgressDisplay.bar(percent, width: 24)
                FileHandle.standardError.write(Data("\r\u{1B}[2K\(label) [\(bar)] \(String(format: "%3d", percent))%  \(note)".utf8))
                state.lastDraw = now
                state.drawn = true
            } else if percent / 10 != state.lastDecile {
                state.lastDecile = percent / 10
                FileHandle.standardError.write(Data("\(label) \(String(format: "%3d", percent))%  \(note)\n".utf8))
            }
        }
    }

    func finish() {
        state.withLock { state in
            if state.drawn { FileHandle.standardError.write(Data("\n".utf8)) }
            state.drawn = false
        }
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }
}

/// Ctrl-C while following a job: the first SIGINT stops waiting (the caller then asks what to do).
final class Interrupt: @unchecked Sendable {
    enum Outcome<T: Sendable>: Sendable {
        case finished(Result<T, any Error>)
        case interrupted
    }

    /// Set once in init, cancelled once in `restore`.
    private let source: any DispatchSourceSignal
    private let stream: AsyncStream<Void>
    private let feed: AsyncStream<Void>.Continuation

    init() {
        (stream, feed) = AsyncStream.makeStream(of: Void.self)
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let feed = self.feed
        source.setEventHandler { feed.yield() }
        source.resume()
    }

    /// The task's result, or `.interrupted` if Ctrl-C comes first.
    func race<T: Sendable>(_ task: Task<T, any Error>) async -> Outcome<T> {
        let stream = self.stream
        return await withTaskGroup(of: Outcome<T>?.self) { group in
            group.addTask { .finished(await task.result) }
            group.addTask {
                for await _ in stream { return .interrupted }
                return nil
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                guard let next else { continue }
                // The group waits for its children: the watched task must end too.
                if case .interrupted = next { task.cancel() }
                return next
            }
            return .interrupted
        }
    }

    func restore() {
        source.cancel()
        feed.finish()
        signal(SIGINT, SIG_DFL)
    }

    /// Asks on the terminal whether to cancel; without one (a script, CI), no.
    static func askToCancel() -> Bool {
        guard isatty(STDIN_FILENO) != 0 else { return false }
        FileHandle.standardError.write(Data("\nCancel the job on the server? [y/N] ".utf8))
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }
}
