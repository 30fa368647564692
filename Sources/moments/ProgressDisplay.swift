import Foundation
import Highlights
import Synchronization

/// Shows engine progress on standard error: a live bar on a terminal, one line per stage otherwise.
final class ProgressDisplay: Sendable {
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let state = Mutex<(stage: Stage?, drawn: Bool)>((nil, false))

    var update: @Sendable (ProgressUpdate) -> Void { { [self] in self.show($0) } }

    private func show(_ update: ProgressUpdate) {
        state.withLock { state in
            let percent = Int((update.fraction * 100).rounded(.down))
            if isTerminal {
                write("\r\u{1B}[2K[\(Self.bar(percent, width: 30))] \(String(format: "%3d", percent))%  \(update.stage.message)")
                state.drawn = true
            } else if update.stage != state.stage {
                write("[\(String(format: "%3d", percent))%] \(update.stage.message)\n")
            }
            state.stage = update.stage
        }
    }

    func finish() {
        state.withLock { state in
            if state.drawn { write("\n") }
            state.drawn = false
        }
    }

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }

    /// `████······`: `percent` (clamped to 0–100) of `width` cells filled.
    static func bar(_ percent: Int, width: Int) -> String {
        let filled = width * min(100, max(0, percent)) / 100
        return String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
    }
}

/// Turns SIGINT and SIGTERM into cancellation of the running engine (which removes partial output).
final class SignalCancellation {
    private let sources: [any DispatchSourceSignal]
    private static let receivedSignal = Atomic<Int32>(0)

    /// The signal that cancelled the work, if one did.
    static var received: Int32? {
        let number = receivedSignal.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }

    init(flag: CancellationFlag) {
        sources = [SIGINT, SIGTERM].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                Self.receivedSignal.store(signalNumber, ordering: .relaxed)
                flag.cancel()
            }
            source.resume()
            return source
        }
    }

    func restore() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
