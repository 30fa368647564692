/// The version of this build of Moments: what `moments --version` prints, what each worker
/// records in the registry, and what the console shows beside every worker.
public enum MomentsVersion {
    public static let current = "1.1.0"
}
