import MomentsModel

/// Settings read from the environment (what Railway, Render and Kubernetes inject).
public enum Setting {
    /// A whole number within `range`; `value` when the variable is unset or empty.
    public static func integer(
        _ name: String, in environment: Settings, default value: Int,
        range: ClosedRange<Int>
    ) throws(SettingError) -> Int {
        guard let text = environment[name], !text.isEmpty else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw SettingError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'.")
        }
        return number
    }

    /// `true`/`false` (also 1/0, yes/no, on/off); `value` when the variable is unset or empty.
    public static func boolean(_ name: String, in environment: Settings, default value: Bool) throws(SettingError) -> Bool {
        guard let text = environment[name]?.lowercased().filter({ $0 != " " }), !text.isEmpty else { return value }
        switch text {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw SettingError("\(name) must be true or false, not '\(text)'.")
        }
    }
}
