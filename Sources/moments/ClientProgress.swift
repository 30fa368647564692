import Foundation
import MomentsKit
import MomentsSupport
import Synchronization

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
