/// A stretch of the source chosen for (or considered for) the highlight.
public struct Segment: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    public var score: Double
    /// Why it was chosen, in words.
    public var reasons: [String]
    public var shot: Int

    public var duration: Double { end - start }

    enum CodingKeys: String, CodingKey { case start, end, score, reasons, shot }
}

/// The selector's answer.
public struct Selection: Sendable {
    init(segments: [Segment], candidates: [Segment]) {
        self.segments = segments
        self.candidates = candidates
    }

    public var segments: [Segment]
    /// The best candidates considered (for the analysis report).
    public var candidates: [Segment]
    /// The source's speech and pauses, and how many edges the selection moved out of speech.
    var pauses = SpeechPauses([])
    var edgesMovedIntoPauses = 0
    public var total: Double { segments.reduce(0) { $0 + $1.duration } }
}
