/// What a device may do: its plan. Stored in `devices.plan` and sent to clients; never rename a case.
public enum Plan: String, Sendable, Codable, CaseIterable {
    /// A monthly quota (3 by default, `FREE_MONTHLY_HIGHLIGHTS`).
    case free
    /// Unlimited (the App Store subscription `com.moments.pro.monthly`); set with SQL.
    case pro
}
