/// A test's own failure, said in one sentence: what the support code throws when the system
/// under test answers in a way no assertion was written for (a refused upload, no token, a
/// socket that will not open).
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
