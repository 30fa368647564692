import Foundation

/// A TCP proxy on a free local port in front of an HTTP server (SeaweedFS in the fault tests) that
/// reads each request's head and, as `plan` says, passes the exchange through untouched, answers
/// with an error status itself, or holds the connection open without a word. Every request is
/// recorded with what was done to it, so a test can show its faults really happened.
///
/// Our clients open a connection per request, so one connection is one exchange. Passing bytes
/// through unchanged keeps SigV4 signatures valid: the signed `Host` is the proxy's address, and
/// that is the `Host` the server receives.
public final class FaultProxy: @unchecked Sendable {
    public enum Fault: Sendable, Equatable {
        case pass
        /// Answers with this status and an S3 error body, after reading the request's body.
        case status(Int)
        /// Reads what comes and never answers, until the client gives up.
        case silence
        /// Passes the request through and waits for the whole answer, then closes the client's
        /// connection without a byte of it: the server did the work, the client never hears.
        case dropResponse
    }

    public struct Exchange: Sendable, CustomStringConvertible {
        public var method: String
        public var path: String
        public var fault: Fault
        public var description: String { "\(method) \(path) → \(fault)" }
    }

    public let port: Int
    private let listener: Int32
    private let upstreamPort: Int
    private let plan: @Sendable (_ method: String, _ path: String, _ earlier: [Exchange]) -> Fault
    private let lock = NSLock()
    private var recorded: [Exchange] = []
    private var closed = false

    /// Listens on 127.0.0.1; `plan` decides each request from its method, path and the exchanges before it.
    public init(upstreamPort: Int, plan: @escaping @Sendable (_ method: String, _ path: String, _ earlier: [Exchange]) -> Fault) throws {
        self.upstreamPort = upstreamPort
        self.plan = plan
        (listener, port) = try Loopback.listen(backlog: 64, reuseAddress: true)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Every request so far, in arrival order.
    public var exchanges: [Exchange] { lock.withLock { recorded } }

    /// Stops listening. Only the first call closes the listening socket: a second `close` of its
    /// number (a test's `close`, then `deinit`) would close whatever took that number since, in
    /// this process (SwiftNIO traps on the EBADF that a socket of its own then gives).
    public func close() {
        let first = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    deinit { close() }

    private var isClosed: Bool { lock.withLock { closed } }

    private func acceptLoop() {
        while !isClosed {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { Glibc.close(client) }
        // The request's head, and whatever of its body came with it.
        var head = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while head.range(of: Data("\r\n\r\n".utf8)) == nil {
            let count = read(client, &buffer, buffer.count)
            guard count > 0, head.count < 1 << 20 else { return }
            head.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: head.prefix(upTo: head.range(of: Data("\r\n\r\n".utf8))!.upperBound), as: UTF8.self)
        let requestLine = text.prefix { $0 != "\r" }.split(separator: " ")
        let method = requestLine.first.map(String.init) ?? "", path = requestLine.dropFirst().first.map(String.init) ?? ""
        let fault = lock.withLock {
            let fault = plan(method, path, recorded)
            recorded.append(Exchange(method: method, path: path, fault: fault))
            return fault
        }
        switch fault {
        case .pass:
            pass(client, first: head)
        case .status(let status):
            let headEnd = head.range(of: Data("\r\n\r\n".utf8))!.upperBound
            var remaining = Self.contentLength(text) - (head.count - headEnd)
            while remaining > 0 {
                let count = read(client, &buffer, min(buffer.count, remaining))
                guard count > 0 else { return }
                remaining -= count
            }
            let body =
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>\(status == 503 ? "SlowDown" : "InternalError")</Code>"
                + "<Message>injected by the fault proxy</Message></Error>"
            let reply =
                "HTTP/1.1 \(status) Injected\r\nContent-Type: application/xml\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)"
            Self.writeAll(client, Data(reply.utf8))
        case .silence:
            while !isClosed, read(client, &buffer, buffer.count) > 0 {}
        case .dropResponse:
            dropResponse(client, first: head)
        }
    }

    private func dropResponse(_ client: Int32, first: Data) {
        guard let upstream = connectUpstream(sending: first) else { return }
        defer {
            shutdown(client, Int32(SHUT_RDWR))  // the copying thread's read returns
            Glibc.close(upstream)
        }
        Thread.detachNewThread { Self.copy(from: client, to: upstream) }
        // The answer's head, then as many body bytes as it announces.
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let end = answer.range(of: Data("\r\n\r\n".utf8))?.upperBound {
                let length = Self.contentLength(String(decoding: answer.prefix(upTo: end), as: UTF8.self))
                if answer.count - end >= length { return }
            }
            let count = read(upstream, &buffer, buffer.count)
            guard count > 0 else { return }
            answer.append(contentsOf: buffer[0..<count])
        }
    }

    /// A connection to the server with `first` (what was read of the request) sent on it; nil
    /// when the server cannot be reached.
    private func connectUpstream(sending first: Data) -> Int32? {
        guard let upstream = try? Loopback.connect(port: upstreamPort) else { return nil }
        guard Self.writeAll(upstream, first) else {
            Glibc.close(upstream)
            return nil
        }
        return upstream
    }

    /// Connects upstream, sends what was read, then copies both ways until either side closes.
    private func pass(_ client: Int32, first: Data) {
        guard let upstream = connectUpstream(sending: first) else { return }
        defer { Glibc.close(upstream) }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Self.copy(from: upstream, to: client)
            shutdown(client, Int32(SHUT_WR))
            done.signal()
        }
        Self.copy(from: client, to: upstream)
        shutdown(upstream, Int32(SHUT_WR))
        done.wait()
    }

    private static func copy(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0, writeAll(destination, Data(buffer[0..<count])) else { return }
        }
    }

    @discardableResult
    private static func writeAll(_ descriptor: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    private static func contentLength(_ head: String) -> Int {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}
