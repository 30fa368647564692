import Foundation

/// A failing case as the soak keeps it in the regression folder, for the suite to replay: the case
/// (its source beside it as `case.sourceName` when small) and what failed when it was found.
public struct PipelineFinding: Codable, Sendable {
    public var pipelineCase: PipelineCase
    public var violations: [String]
    /// When it was found (ISO 8601).
    public var found: String

    public init(pipelineCase: PipelineCase, violations: [String], found: Date = Date()) {
        self.pipelineCase = pipelineCase
        self.violations = violations
        self.found = ISO8601DateFormatter().string(from: found)
    }

    enum CodingKeys: String, CodingKey { case pipelineCase = "case", violations, found }
}
