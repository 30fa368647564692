import Foundation
import MomentsContract

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Part uploads on a background `URLSession` (one per identifier, for the life of the process):
/// the system keeps sending them while the app is suspended. Background sessions take no
/// completion handlers, so answers come through this delegate, matched to their callers by task.
/// A part that finishes while the app is not running is found on the next launch by asking the
/// server which parts arrived; nothing here needs to survive the process.
final class BackgroundParts: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var sessions: [String: BackgroundParts] = [:]
    nonisolated(unsafe) private static var finishedEvents: [String: @Sendable () -> Void] = [:]

    private let lock = NSLock()
    private var waiting: [Int: CheckedContinuation<Transfer.Result, any Error>] = [:]
    private var bodies: [Int: Data] = [:]
    private var session: URLSession!

    private init(identifier: String) {
        super.init()
        #if canImport(FoundationNetworking)
            // swift-corelibs-foundation has no background sessions: the same delegate path, in process.
            let configuration = URLSessionConfiguration.default
        #else
            let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
            configuration.sessionSendsLaunchEvents = true
            configuration.isDiscretionary = false
        #endif
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    /// The background session named `identifier`.
    static func session(_ identifier: String) -> BackgroundParts {
        lock.withLock {
            if let existing = sessions[identifier] { return existing }
            let made = BackgroundParts(identifier: identifier)
            sessions[identifier] = made
            return made
        }
    }

    /// Keeps the completion handler the app delegate was given for `identifier`'s events, to call
    /// once the session has delivered them all.
    static func handleEvents(identifier: String, completion: @escaping @Sendable () -> Void) {
        lock.withLock { finishedEvents[identifier] = completion }
        _ = session(identifier)
    }

    func upload(_ request: URLRequest, from file: URL) async throws(MomentsClientError) -> Transfer.Result {
        let task = session.uploadTask(with: request, fromFile: file)
        return try await Transfer.run(task) { continuation in lock.withLock { waiting[task.taskIdentifier] = continuation } }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { bodies[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, body) = lock.withLock { () -> (CheckedContinuation<Transfer.Result, any Error>?, Data) in
            defer {
                waiting[task.taskIdentifier] = nil
                bodies[task.taskIdentifier] = nil
            }
            return (waiting[task.taskIdentifier], bodies[task.taskIdentifier] ?? Data())
        }
        // A task of an earlier launch: nobody waits; the server's parts list will show it.
        guard let continuation else { return }
        if let error {
            continuation.resume(throwing: MomentsClientError.transport(error))
        } else if let response = task.response as? HTTPURLResponse {
            continuation.resume(returning: Transfer.Result(response: response, data: body))
        } else {
            continuation.resume(throwing: MomentsClientError.invalid("The storage service gave no HTTP answer to a part."))
        }
    }

    #if !canImport(FoundationNetworking)
        func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
            guard let identifier = session.configuration.identifier else { return }
            let completion = Self.lock.withLock { Self.finishedEvents.removeValue(forKey: identifier) }
            DispatchQueue.main.async { completion?() }
        }
    #endif
}

extension MomentsClient {
    /// Call from `application(_:handleEventsForBackgroundURLSession:completionHandler:)` with the
    /// identifier of `PartTransport.background`: the session is recreated so the system can deliver
    /// what finished while the app was not running, and `completion` is called once it has.
    public static func handleBackgroundEvents(identifier: String, completion: @escaping @Sendable () -> Void) {
        BackgroundParts.handleEvents(identifier: identifier, completion: completion)
    }
}
