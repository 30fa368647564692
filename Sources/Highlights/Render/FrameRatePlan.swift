import Foundation
import MomentsModel

/// Which of the source's pictures a highlight shows. Under `fps=30` a source faster than 33
/// pictures a second shows every `step`-th, `step` the smallest that brings it to 31 or below
/// (`FrameRateChoice.fastestOutput`: 60 → 30, 59.94 → 29.97, 50 → 25, 90 → 30, 120 → 30);
/// otherwise every picture (`step` 1).
struct FrameRatePlan: Sendable, Equatable {
    /// The source's pictures a second, on average.
    let sourceRate: Double
    /// Every `step`-th picture is shown.
    let step: Int

    init(sourceRate: Double, choice: FrameRateChoice) {
        self.sourceRate = sourceRate
        step = choice.pictureStep(sourceRate: sourceRate)
    }

    /// The plan for `analysis`'s source: its rate counted (pictures over length), not the rate the
    /// container states, which for uneven timestamps in MPEG-TS can be four times the real one.
    init(analysis: Analysis, choice: FrameRateChoice) {
        let counted = analysis.info.duration > 0 && analysis.totalFrames > 1 ? Double(analysis.totalFrames) / analysis.info.duration : 0
        self.init(sourceRate: counted > 0 ? counted : analysis.info.frameRate, choice: choice)
    }

    /// The highlight's pictures a second.
    var outputRate: Double { sourceRate / Double(step) }

    /// Whether the picture at `time` is shown, in a segment whose first picture is at `anchor`
    /// (seconds, same clock): the first picture of each output interval counted from the anchor.
    /// It asks whether the picture one source interval before falls in an earlier interval, so it
    /// needs no other picture (a decoder may hand them out of order) and tolerates timestamps off
    /// by under half a picture.
    func shows(_ time: Double, anchor: Double) -> Bool {
        guard step > 1, sourceRate > 0 else { return true }
        let interval = 1 / sourceRate
        func slot(_ offset: Double) -> Double {
            offset < -0.5 * interval ? -1 : (offset / (interval * Double(step)) + 0.5 / Double(step)).rounded(.down)
        }
        let offset = time - anchor
        return slot(offset) != slot(offset - interval)
    }
}
