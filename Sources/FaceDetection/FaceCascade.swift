import Foundation

/// A boosted cascade of Haar-feature stumps (Viola–Jones), read from an OpenCV cascade file:
/// the frontal-face cascade Debian's opencv-data package ships, so nothing is fetched at run time.
///
/// Each stage sums its weak classifiers' leaf values and rejects a window whose sum falls below the
/// stage's threshold; a window every stage passes is a detection. A weak classifier compares one
/// feature (weighted sums of up to three rectangles of the window, divided by the window's
/// standard deviation times its area) with its threshold.
public struct FaceCascade: Sendable {
    public struct Rect: Sendable {
        public var x, y, width, height: Int
        public var weight: Float
    }

    public struct Stump: Sendable {
        public var feature: Int
        public var threshold: Float
        public var left: Float
        public var right: Float
    }

    public struct Stage: Sendable {
        public var threshold: Float
        public var stumps: [Stump]
    }

    /// The window the cascade was trained on (24 × 24 for the frontal-face cascade).
    public var width: Int
    public var height: Int
    public var stages: [Stage]
    public var features: [[Rect]]

    /// Where Debian's opencv-data puts the frontal-face cascade.
    public static let standardPath = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"

    public struct Malformed: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw Malformed(description: "the face cascade \(path) could not be read")
        }
        try self.init(xml: text)
    }

    /// Parses the cascade format OpenCV 3 and later write (`<cascade>` with `<stages>` and
    /// `<features>`, stumps only: what the Haar face cascades hold).
    public init(xml: String) throws {
        var width = 0, height = 0
        var stages: [Stage] = [], features: [[Rect]] = []
        var path: [Substring] = []
        var nodes: [Float] = []
        var scanner = Substring(xml)
        func numbers(_ text: Substring) -> [Float] { text.split(whereSeparator: \.isWhitespace).compactMap { Float($0) } }
        while let open = scanner.firstIndex(of: "<") {
            let text = scanner[..<open]
            scanner = scanner[scanner.index(after: open)...]
            if !text.allSatisfy(\.isWhitespace), let name = path.last {
                let parent = path.dropLast().last
                switch name {
                case "width" where parent == "cascade": width = Int(numbers(text).first ?? 0)
                case "height" where parent == "cascade": height = Int(numbers(text).first ?? 0)
                case "stageThreshold":
                    guard !stages.isEmpty, let value = numbers(text).first else { throw Malformed(description: "a stage has no threshold") }
                    stages[stages.count - 1].threshold = value
                case "internalNodes":
                    nodes = numbers(text)
                    guard nodes.count == 4, nodes[0] == 0, nodes[1] == -1 else {
                        throw Malformed(description: "only cascades of stumps are read (a node has \(nodes.count) numbers)")
                    }
                case "leafValues":
                    let leaves = numbers(text)
                    guard leaves.count == 2, nodes.count == 4, !stages.isEmpty else {
                        throw Malformed(description: "a weak classifier has no leaves")
                    }
                    stages[stages.count - 1].stumps.append(Stump(feature: Int(nodes[2]), threshold: nodes[3], left: leaves[0], right: leaves[1]))
                case "_" where parent == "rects":
                    let v = numbers(text)
                    guard v.count == 5, !features.isEmpty else { throw Malformed(description: "a feature rectangle is not x y width height weight") }
                    features[features.count - 1].append(Rect(x: Int(v[0]), y: Int(v[1]), width: Int(v[2]), height: Int(v[3]), weight: v[4]))
                default: break
                }
            }
            guard let close = scanner.firstIndex(of: ">") else { throw Malformed(description: "an element is not closed") }
            let tag = scanner[..<close]
            scanner = scanner[scanner.index(after: close)...]
            if tag.hasPrefix("!--") {
                // A comment may hold ">": skip to its end.
                if !tag.hasSuffix("--"), let end = scanner.range(of: "-->") { scanner = scanner[end.upperBound...] }
                continue
            }
            if tag.hasPrefix("?") || tag.hasPrefix("!") || tag.hasSuffix("/") { continue }
            if tag.hasPrefix("/") {
                guard !path.isEmpty else { throw Malformed(description: "an element closes that was never opened") }
                path.removeLast()
                continue
            }
            let name = tag.split(whereSeparator: \.isWhitespace).first ?? tag
            if name == "_" {
                switch path.last {
                case "stages": stages.append(Stage(threshold: 0, stumps: []))
                case "features": features.append([])
                default: break
                }
            }
            path.append(name)
        }
        guard width > 0, height > 0, !stages.isEmpty, !features.isEmpty else {
            throw Malformed(description: "no cascade of stages and features was found")
        }
        for stage in stages {
            for stump in stage.stumps where !features.indices.contains(stump.feature) {
                throw Malformed(description: "a weak classifier names feature \(stump.feature) of \(features.count)")
            }
        }
        for rects in features {
            for r in rects where r.x < 0 || r.y < 0 || r.width <= 0 || r.height <= 0 || r.x + r.width > width || r.y + r.height > height {
                throw Malformed(description: "a feature rectangle leaves the \(width) × \(height) window")
            }
        }
        self.width = width
        self.height = height
        self.stages = stages
        self.features = features
    }
}
