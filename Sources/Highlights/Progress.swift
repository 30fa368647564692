import Foundation
import MomentsModel
import Synchronization

/// The stages a highlight goes through, with the share of the work each takes.
public enum Stage: String, Sendable, Codable, CaseIterable {
    case probing, analyzing, selecting, rendering, finishing

    /// Overall progress (0…1) at the start of the stage and its share of the whole.
    var span: (start: Double, width: Double) {
        switch self {
        case .probing: (0, 0.02)
        case .analyzing: (0.02, 0.48)
        case .selecting: (0.50, 0.02)
        case .rendering: (0.52, 0.46)
        case .finishing: (0.98, 0.02)
        }
    }

    /// A short sentence for people watching the job.
    public var message: String {
        switch self {
        case .probing: "Reading the video"
        case .analyzing: "Finding scenes, motion and sound"
        case .selecting: "Choosing the best moments"
        case .rendering: "Rendering the highlight"
        case .finishing: "Finishing the highlight"
        }
    }
}

/// One progress report: the stage and the overall fraction done (0…1, never decreasing).
public struct ProgressUpdate: Sendable, Equatable, Codable {
    public var stage: Stage
    public var fraction: Double
}

/// Turns per-stage fractions into overall progress that never goes backwards, reported at least
/// every `interval` of work and at every stage change.
final class ProgressReporter {
    private let handler: @Sendable (ProgressUpdate) -> Void
    let cancellation: CancellationFlag
    private let interval: TimeInterval
    private var last = 0.0
    private var lastReport = Date.distantPast
    private var stage: Stage?
    /// The part of a stage's share that reports of 0…1 fill: all of it, unless the stage is done in
    /// steps (`within`).
    private var part: ClosedRange<Double> = 0...1

    init(interval: TimeInterval = 0.2, cancellation: CancellationFlag, handler: @escaping @Sendable (ProgressUpdate) -> Void) {
        self.interval = interval
        self.cancellation = cancellation
        self.handler = handler
    }

    /// Reports `fraction` (0…1) of `stage`; throws `cancelled` if the job was cancelled.
    /// The work is done and saved: the last report, which a cancellation arriving now cannot undo.
    func finish() {
        stage = .finishing
        last = 1
        lastReport = Date()
        handler(ProgressUpdate(stage: .finishing, fraction: 1))
    }

    func report(_ stage: Stage, _ fraction: Double) throws {
        try cancellation.check()
        let done = part.lowerBound + (part.upperBound - part.lowerBound) * max(0, min(1, fraction))
        let overall = max(last, stage.span.start + stage.span.width * done)
        let now = Date()
        guard stage != self.stage || now.timeIntervalSince(lastReport) >= interval || overall >= 1 else { return }
        self.stage = stage
        last = overall
        lastReport = now
        handler(ProgressUpdate(stage: stage, fraction: overall))
    }

    /// Runs one step of a stage done in steps: its reports of 0…1 fill only `step` (a part of
    /// 0…1) of the stage's share, so that the next step carries on from there.
    func within<T>(_ step: ClosedRange<Double>, _ body: () throws -> T) rethrows -> T {
        let whole = part
        let width = whole.upperBound - whole.lowerBound
        part = (whole.lowerBound + width * step.lowerBound)...(whole.lowerBound + width * step.upperBound)
        defer { part = whole }
        return try body()
    }
}

/// Set from any thread to stop the engine; the engine checks it between packets and frames.
public final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func cancel() { flag.store(true, ordering: .relaxed) }
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }

    func check() throws {
        if isCancelled { throw MomentsError(.cancelled, "The highlight was cancelled.") }
    }
}
