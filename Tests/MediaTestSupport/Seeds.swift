import Foundation

/// Tests that draw new inputs every run print their seeds with each failure; an environment
/// variable (`MOMENTS_BEAT_SEED=a,b`) replays them.
public enum Seeds {
    /// The seeds listed in `variable`, separated by commas; nil when it is not set.
    public static func replayed(_ variable: String) -> [UInt64]? {
        ProcessInfo.processInfo.environment[variable].map { $0.split(separator: ",").compactMap { UInt64($0) } }
    }
}
