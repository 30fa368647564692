import Foundation
import MomentsContract
import MomentsModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP exchange on a URLSession of its own, whose delegate reports bytes sent and received,
/// streams a response body as it arrives (Server-Sent Events), writes downloads straight to disk,
/// and drops the `Authorization` header when a redirect leaves the server (a presigned storage URL
/// carries its own signature and refuses a second one). Works the same with Apple's Foundation and
/// with swift-corelibs-foundation on Linux.
final class Transfer: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    enum Body {
        case none
        case data(Data)
        /// Sent from the file as it is read, never loaded whole.
        case file(URL)
    }

    enum Sink {
        /// The response body in memory (JSON answers).
        case memory
        /// The response body written to this file when the status is 2xx.
        case file(URL)
        /// The response body handed over as it arrives.
        case stream(@Sendable (Data) -> Void)
    }

    struct Result {
        var response: HTTPURLResponse
        /// The body, for `.memory`, and for any non-2xx answer (the server's error JSON).
        var data: Data
    }

    private let lock = NSLock()
    private var received = Data()
    private var fileError: (any Error)?
    private var continuation: CheckedContinuation<Result, any Error>?
    private let sink: Sink
    private let sent: (@Sendable (Int64, Int64) -> Void)?
    private let written: (@Sendable (Int64, Int64) -> Void)?
    private let originHost: String?

    private init(sink: Sink, originHost: String?, sent: (@Sendable (Int64, Int64) -> Void)?, written: (@Sendable (Int64, Int64) -> Void)?) {
        self.sink = sink
        self.originHost = originHost
        self.sent = sent
        self.written = written
    }

    /// Runs `request`; `sent(bytes, total)` follows the upload, `written(bytes, total)` the download
    /// (total is -1 when unknown). Cancelling the calling task cancels the request.
    static func perform(
        _ request: URLRequest, body: Body = .none, sink: Sink = .memory, timeout: TimeInterval = 60,
        sent: (@Sendable (Int64, Int64) -> Void)? = nil,
        written: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(MomentsClientError) -> Result {
        let transfer = Transfer(sink: sink, originHost: request.url?.host, sent: sent, written: written)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        configuration.httpMaximumConnectionsPerHost = 1
        let session = URLSession(configuration: configuration, delegate: transfer, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task: URLSessionTask
        switch (body, sink) {
        case (.file(let file), _):
            task = session.uploadTask(with: request, fromFile: file)
        case (.data(let data), _):
            task = session.uploadTask(with: request, from: data)
        case (.none, .file):
            task = session.downloadTask(with: request)
        case (.none, _):
            task = session.dataTask(with: request)
        }
        return try await run(task) { continuation in transfer.lock.withLock { transfer.continuation = continuation } }
    }

    /// Starts `task` and waits for the answer its delegate hands to the continuation `register`
    /// keeps; cancelling the calling task cancels it.
    static func run(
        _ task: URLSessionTask,
        register: (CheckedContinuation<Result, any Error>) -> Void
    ) async throws(MomentsClientError) -> Result {
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    register(continuation)
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as MomentsClientError {
            throw error
        } catch {
            throw MomentsClientError.transport(error)
        }
    }

    // MARK: URLSession delegate

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        sent?(totalBytesSent, totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let status = (dataTask.response as? HTTPURLResponse)?.statusCode ?? 0
        if case .stream(let handler) = sink, (200..<300).contains(status) {
            handler(data)
        } else {
            lock.withLock { received.append(data) }
        }
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        written?(totalBytesWritten, totalBytesExpectedToWrite)
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        // The file at `location` is gone when this returns: move it now.
        let status = (downloadTask.response as? HTTPURLResponse)?.statusCode ?? 0
        guard case .file(let destination) = sink, (200..<300).contains(status) else {
            let body = (try? Data(contentsOf: location)) ?? Data()
            lock.withLock { received = body }
            return
        }
        do {
            let manager = FileManager.default
            try? manager.removeItem(at: destination)
            try manager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try manager.moveItem(at: location, to: destination)
        } catch {
            lock.withLock { fileError = error }
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        var next = request
        if request.url?.host != originHost { next.setValue(nil, forHTTPHeaderField: "Authorization") }
        completionHandler(next)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = lock.withLock { () -> (CheckedContinuation<Result, any Error>?, Swift.Result<Result, any Error>) in
            defer { self.continuation = nil }
            if let error { return (self.continuation, .failure(MomentsClientError.transport(error))) }
            if let fileError {
                return (
                    self.continuation,
                    .failure(
                        MomentsClientError(
                            kind: .file, code: "file_error",
                            message: "Could not save the download: \(fileError.localizedDescription)"))
                )
            }
            guard let response = task.response as? HTTPURLResponse else {
                return (self.continuation, .failure(MomentsClientError.invalid("The server sent no HTTP response.")))
            }
            return (self.continuation, .success(Result(response: response, data: received)))
        }
        continuation?.resume(with: result)
    }
}
