/// The limits every part of Moments shares: the API checks them, the engine works to them, and the
/// SDK, the command line and the job store default to them. Written here once.
public enum HighlightLimits {
    /// Highlight lengths a client may ask for, in whole seconds.
    public static let targetDurations = 5...120
    /// The length of a highlight when none is asked for, in seconds.
    public static let defaultTargetDuration = 30
    /// The shortest source accepted, in seconds.
    public static let minimumSourceDuration = 1
    /// The longest source accepted, in seconds (30 minutes).
    public static let maximumSourceDuration = 30 * 60
    /// How long a resumable upload may take from its reservation to its start, in hours; the
    /// retention sweep aborts multipart uploads left unfinished an hour past it.
    public static let resumableUploadHours = 24
    /// How long a direct upload's staged object may wait for its start, in hours, counted from when
    /// its upload URL expires (a PUT that began in time may end after it): the reservation lives
    /// that long, and the retention sweep deletes a staged object no start took once it is older.
    public static let stagedUploadHours = 2
}
