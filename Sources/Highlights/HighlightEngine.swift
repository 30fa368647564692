import Foundation
import Media
import MomentsModel

/// What to make.
public struct HighlightSettings: Sendable {
    /// Target length of the highlight in seconds.
    public var duration: Double = 30
    public var quality: Quality = .high
    public var limits = MediaLimits()

    public init(duration: Double = 30, quality: Quality = .high, limits: MediaLimits = MediaLimits()) {
        self.duration = duration
        self.quality = quality
        self.limits = limits
    }
}

/// The highlight engine: analysis, selection and render of one video. Blocking; run it off the
/// cooperative pool (a worker thread). Reports progress and honours cancellation between frames.
public struct HighlightEngine: Sendable {
    public init() { FFmpegLog.quiet() }

    /// Analyses `input` without rendering.
    public func analyze(input: String, settings: HighlightSettings = HighlightSettings(),
                        cancellation: CancellationFlag = CancellationFlag(),
                        progress: @escaping @Sendable (ProgressUpdate) -> Void = { _ in }) throws(MomentsError) -> Analysis {
        let reporter = ProgressReporter(cancellation: cancellation, handler: progress)
        return try Self.mapErrors { try Analyzer.run(path: input, limits: settings.limits, reporter: reporter) }
    }

    /// Turns any error into a `MomentsError` with a stable code.
    static func mapErrors<T>(_ body: () throws -> T) throws(MomentsError) -> T {
        do {
            return try body()
        } catch let error as MomentsError {
            throw error
        } catch let error as FFmpegError {
            throw MomentsError(.corruptMedia, "The video could not be processed (\(error.reason)); the file may be damaged.")
        } catch {
            throw MomentsError(.internalError, "The highlight could not be made because of an internal error.")
        }
    }
}
