import Foundation

/// A chart drawn on the server as SVG: stacked bars or lines over time buckets, with a y axis
/// of round steps, labelled start and end times, and a legend. No script and no style attribute
/// (the console's CSP allows neither inline); colours are presentation attributes.
struct SVGChart {
    struct Series {
        var name: String
        var colour: String
        /// One value per bucket; nil where there is none (a gap in a line).
        var values: [Double?]
    }

    enum Kind { case stackedBars, lines }

    var title: String
    var unit: String
    var kind: Kind
    var labels: (first: String, last: String)
    var series: [Series]

    static let width = 640.0, height = 200.0
    static let left = 48.0, right = 8.0, top = 12.0, bottom = 40.0

    var svg: String {
        let count = series.map(\.values.count).max() ?? 0
        let plotWidth = Self.width - Self.left - Self.right, plotHeight = Self.height - Self.top - Self.bottom
        let peak: Double =
            switch kind {
            case .stackedBars: (0..<count).map { i in series.reduce(0) { $0 + ($1.values[safe: i].flatMap { $0 } ?? 0) } }.max() ?? 0
            case .lines: series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
            }
        let step = Self.niceStep(peak / 4)
        let ceiling = max(step * 4, step)
        func y(_ value: Double) -> Double { Self.top + plotHeight * (1 - min(value, ceiling) / ceiling) }
        let slot = count > 0 ? plotWidth / Double(count) : plotWidth
        var parts: [String] = []
        parts.append(
            ##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 \##(Int(Self.width)) \##(Int(Self.height))" role="img" aria-label="\##(Self.escape(title))">"##
        )
        parts.append("<title>\(Self.escape(title))</title>")
        for tick in 0...4 {
            let value = step * Double(tick), ty = y(value)
            parts.append(
                ##"<line x1="\##(Self.left)" x2="\##(Self.width - Self.right)" y1="\##(Self.format(ty))" y2="\##(Self.format(ty))" stroke="#d0d7de" stroke-width="1"/>"##
            )
            parts.append(
                ##"<text x="\##(Self.left - 6)" y="\##(Self.format(ty + 4))" text-anchor="end" font-size="11" fill="#57606a">\##(Self.label(value))\##(tick == 4 ? " " + Self.escape(unit) : "")</text>"##
            )
        }
        switch kind {
        case .stackedBars:
            for i in 0..<count {
                var base = 0.0
                for s in series {
                    guard let value = s.values[safe: i].flatMap({ $0 }), value > 0 else { continue }
                    let x = Self.left + slot * Double(i) + slot * 0.1
                    let top = y(base + value), bottom = y(base)
                    parts.append(
                        ##"<rect x="\##(Self.format(x))" y="\##(Self.format(top))" width="\##(Self.format(slot * 0.8))" height="\##(Self.format(max(bottom - top, 0.5)))" fill="\##(s.colour)"><title>\##(Self.escape(s.name)): \##(Self.label(value))</title></rect>"##
                    )
                    base += value
                }
            }
        case .lines:
            for s in series {
                var path = "", pen = false
                for (i, value) in s.values.enumerated() {
                    guard let value else { pen = false; continue }
                    let x = Self.left + slot * (Double(i) + 0.5)
                    path += "\(pen ? "L" : "M")\(Self.format(x)) \(Self.format(y(value))) "
                    pen = true
                    parts.append(
                        ##"<circle cx="\##(Self.format(x))" cy="\##(Self.format(y(value)))" r="2" fill="\##(s.colour)"><title>\##(Self.escape(s.name)): \##(Self.label(value))</title></circle>"##
                    )
                }
                if !path.isEmpty {
                    parts.append(##"<path d="\##(path.trimmingCharacters(in: .whitespaces))" fill="none" stroke="\##(s.colour)" stroke-width="2"/>"##)
                }
            }
        }
        let axisY = Self.height - Self.bottom
        parts.append(
            ##"<text x="\##(Self.left)" y="\##(Self.format(axisY + 14))" font-size="11" fill="#57606a">\##(Self.escape(labels.first))</text>"##)
        parts.append(
            ##"<text x="\##(Self.width - Self.right)" y="\##(Self.format(axisY + 14))" text-anchor="end" font-size="11" fill="#57606a">\##(Self.escape(labels.last))</text>"##
        )
        var legendX = Self.left
        for s in series {
            parts.append(##"<rect x="\##(Self.format(legendX))" y="\##(Self.format(axisY + 24))" width="10" height="10" fill="\##(s.colour)"/>"##)
            parts.append(
                ##"<text x="\##(Self.format(legendX + 14))" y="\##(Self.format(axisY + 33))" font-size="11" fill="#24292f">\##(Self.escape(s.name))</text>"##
            )
            legendX += 24 + Double(s.name.count) * 6.5
        }
        if peak == 0 {
            parts.append(
                ##"<text x="\##(Self.format(Self.left + plotWidth / 2))" y="\##(Self.format(Self.top + plotHeight / 2))" text-anchor="middle" font-size="12" fill="#57606a">no jobs ended in this span</text>"##
            )
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }

    /// 1, 2 or 5 times a power of ten, at least `raw` (and at least 1 for counts of nothing).
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0 else { return 1 }
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * magnitude >= raw { return factor * magnitude }
        return 10 * magnitude
    }

    static func label(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: value < 10 ? "%.1f" : "%.0f", value)
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
