import Foundation

/// HTTP/1.1 over a plain socket: what a test needs to see a server's exact bytes and to pipeline.
public enum RawHTTP {
    public struct Reply {
        public var status: Int
        public var headers: [(String, String)]
        public var body: String
        public var text: String

        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }

        /// The status, every header but `Date` in order, and the body.
        public var comparable: String {
            "\(status)\n" + headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }.joined(separator: "\n")
                + "\n\n" + body
        }
    }

    public static func get(port: Int, path: String, headers: [String]) async throws -> Reply {
        let request =
            "GET \(path) HTTP/1.1\r\n" + (headers.contains { $0.lowercased().hasPrefix("host:") } ? "" : "Host: api.test\r\n")
            + headers.map { "\($0)\r\n" }.joined() + "\r\n"
        let replies = try await exchange(port: port, request, expecting: 1)
        guard let reply = replies.first else { throw TestFailure("no answer to \(path)") }
        return reply
    }

    /// Sends `bytes` at once and reads answers until the server closes or `expecting` have come
    /// (5 s at most). The socket blocks a thread of its own, not one of the tasks' (the server in
    /// this process needs them to answer).
    /// With `halfClose`, the socket's sending side is shut once everything is sent.
    public static func exchange(port: Int, _ text: String, expecting: Int = .max, halfClose: Bool = false) async throws -> [Reply] {
        try await exchange(port: port, Array(text.utf8), expecting: expecting, halfClose: halfClose)
    }

    public static func exchange(port: Int, _ bytes: [UInt8], expecting: Int = .max, halfClose: Bool = false) async throws -> [Reply] {
        let result = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: Result { try blockingExchange(port: port, bytes, expecting: expecting, halfClose: halfClose) })
            }.start()
        }
        return try result.get()
    }

    private static func blockingExchange(port: Int, _ data: [UInt8], expecting: Int, halfClose: Bool) throws -> [Reply] {
        let socket = try Loopback.connect(port: port, receiveTimeout: .seconds(5))
        defer { close(socket) }
        var sent = 0
        while sent < data.count {
            let n = data[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw TestFailure("send: \(errno)") }
            sent += n
        }
        if halfClose { shutdown(socket, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var replies: [Reply] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while replies.count < expecting {
            let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
            replies = parse(received)
        }
        return parse(received)
    }

    /// The complete answers in `bytes` (each with a `Content-Length`).
    public static func parse(_ bytes: [UInt8]) -> [Reply] {
        var replies: [Reply] = []
        var rest = bytes[...]
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let end = rest.firstRange(of: separator) {
            let head = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
            let lines = head.components(separatedBy: "\r\n")
            let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            let headers = lines.dropFirst().compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
            guard rest.distance(from: end.upperBound, to: rest.endIndex) >= length else { break }
            let bodyEnd = rest.index(end.upperBound, offsetBy: length)
            let body = String(decoding: rest[end.upperBound..<bodyEnd], as: UTF8.self)
            replies.append(Reply(status: status, headers: headers, body: body, text: head + "\r\n\r\n" + body))
            rest = rest[bodyEnd...]
        }
        return replies
    }
}
