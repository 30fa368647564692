import CCurl
import Foundation

/// One HTTP exchange over libcurl: the body streams from a file (range) or a small buffer, and the
/// response body streams to a file or, for small replies, into memory. Never holds an object whole.
public struct CurlRequest: Sendable {
    public enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// `length` bytes of the file starting at `offset`.
        case file(URL, offset: Int64, length: Int64)
    }

    public enum Sink: Sendable {
        /// Keep the body in memory (replies of a few kilobytes: XML, errors; cut at 64 KiB).
        case memory
        /// Keep a successful (2xx) body of at most `limit` bytes whole in memory (a range of an
        /// object); a longer one fails the transfer with `CurlFailure.tooLargeCode`.
        case bytes(limit: Int)
        /// Write a successful (2xx) body to this file; error bodies still go to memory. A body
        /// longer than `limit` bytes fails the transfer with `CurlFailure.tooLargeCode`.
        case file(URL, limit: Int64? = nil)
    }

    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: Body = .none
    public var sink: Sink = .memory
    /// A transfer that moves less than 1 byte per second for this long is abandoned (a stalled connection).
    public var stallTimeout: Int = 30
    public var connectTimeout: Int = 5
    /// The whole exchange may take at most this many seconds (none when nil: big objects take long).
    public var totalTimeout: Int?
    /// A destination a user chose, as `DestinationPolicy` checked it: the request goes to the
    /// address that was checked (no second DNS answer), over http or https only, never through a
    /// proxy, and follows no redirect.
    public var destination: CheckedDestination?
    /// HTTP/2 over TLS (ALPN), as APNs requires; HTTP/1.1 otherwise.
    public var http2 = false
    /// Certificates to trust instead of the system's (a test's own server).
    public var caFile: String?

    public init(
        method: String, url: String, headers: [(name: String, value: String)], body: Body = .none, sink: Sink = .memory,
        stallTimeout: Int = 30, connectTimeout: Int = 5, totalTimeout: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.sink = sink
        self.stallTimeout = stallTimeout
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
    }
}

public struct CurlResponse: Sendable {
    public var status: Int
    /// Lower-cased names.
    public var headers: [String: String]
    /// The body when the sink was memory, or the error body of a non-2xx reply (at most 64 KiB).
    public var body: [UInt8]
}

/// A transport failure (no HTTP reply): curl's code and its sentence.
public struct CurlFailure: Error, Sendable {
    public var code: Int
    public var message: String

    /// The code of a failure on this machine (a file that cannot be read or written).
    public static let localCode = -2
    /// The code of a transfer stopped because its task was cancelled.
    public static let cancelledCode = -3
    /// The code of a transfer stopped because the body outgrew the sink's limit.
    public static let tooLargeCode = -4

    /// The calling task was cancelled: the transfer stopped at once (curl's progress callback).
    public var isCancelled: Bool { code == Self.cancelledCode }

    /// Connection refused, reset, timed out, closed early: worth another try.
    public var isTransient: Bool {
        [
            CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
            CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM,
        ]
        .map { Int($0.rawValue) }.contains(code)
    }
}
