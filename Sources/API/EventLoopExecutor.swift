import NIOCore
import NIOPosix

/// Runs the API's Swift tasks on SwiftNIO's event loops instead of Swift's global thread pool.
///
/// A request's task then stays on the event loop its connection (and its database connection)
/// lives on, rather than hopping to a pool thread and back for every read, query and write: the
/// thread switches were a tenth of the status poll's CPU time (scripts/bench-api, BENCH_PROFILE=1).
/// The API never blocks a task: files, probes, Redis and libcurl run on threads of their own.
/// Workers keep the global pool, because the engine's work does block.
public enum EventLoopExecutor {
    /// Call once, first thing in `main`, before any task starts. False when it could not be installed
    /// (then the global pool serves, as before).
    @discardableResult
    public static func takeOver() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
