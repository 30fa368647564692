/// The last few values of a measurement, for thresholds that adapt to what the video has been doing.
struct RecentValues {
    private(set) var values: [Double] = []
    let capacity: Int

    init(capacity: Int = 9) { self.capacity = capacity }

    mutating func add(_ value: Double) {
        values.append(value)
        if values.count > capacity { values.removeFirst() }
    }

    var count: Int { values.count }

    /// The value below which `fraction` of them lie (0 when there are none yet).
    func quantile(_ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }
}
