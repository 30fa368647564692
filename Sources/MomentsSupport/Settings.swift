/// Settings looked up by the names operators set (`DATABASE_URL`, `PORT`, …), whatever supplies
/// them. `moments` reads them through swift-configuration: the process environment first, then a
/// `.env` file, then a secrets directory (`SettingsSources` in the command); a test writes them out
/// as a dictionary literal. Each subsystem reads its own into one plain configuration struct, and
/// every value it refuses names the variable (`Setting`).
public struct Settings: Sendable, ExpressibleByDictionaryLiteral {
    private let source: @Sendable (String) -> String?
    private var overrides: [String: String] = [:]

    /// Settings answered by `source`, which returns nil for a name it does not have.
    public init(_ source: @escaping @Sendable (String) -> String?) {
        self.source = source
    }

    public init(_ values: [String: String]) {
        self.init { values[$0] }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements) { $1 })
    }

    /// The value set for `name`, if any (an empty value counts as unset). Setting a value overrides
    /// the source for this copy only (`moments dev` gives storage a local default); setting nil
    /// unsets it.
    public subscript(name: String) -> String? {
        get {
            let value = overrides[name] ?? source(name)
            return value?.isEmpty == false ? value : nil
        }
        set { overrides[name] = newValue ?? "" }
    }
}
