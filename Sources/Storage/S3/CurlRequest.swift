import CCurl
import Dispatch
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
        /// Keep the body in memory (replies of a few kilobytes: XML, errors).
        case memory
        /// Write a successful (2xx) body to this file; error bodies still go to memory.
        case file(URL)
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

    public init(method: String, url: String, headers: [(name: String, value: String)], body: Body = .none, sink: Sink = .memory,
                stallTimeout: Int = 30, connectTimeout: Int = 5, totalTimeout: Int? = nil) {
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

    /// Connection refused, reset, timed out, closed early: worth another try.
    public var isTransient: Bool {
        [CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
         CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM]
            .map { Int($0.rawValue) }.contains(code)
    }
}

/// libcurl, for S3 and for webhooks.
public enum Curl {
    private static let initialized: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()
    private static let queue = DispatchQueue(label: "moments.s3.curl", attributes: .concurrent)

    /// Performs the request on a thread of its own (curl blocks) and returns the reply.
    public static func perform(_ request: CurlRequest) async -> Result<CurlResponse, CurlFailure> {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: performBlocking(request)) }
        }
    }

    private static func performBlocking(_ request: CurlRequest) -> Result<CurlResponse, CurlFailure> {
        guard initialized, let handle = curl_easy_init() else {
            return .failure(CurlFailure(code: -1, message: "libcurl could not be initialised"))
        }
        defer { curl_easy_cleanup(handle) }
        let state = TransferState()
        defer { state.close() }
        do {
            try state.open(request)
        } catch {
            return .failure(CurlFailure(code: -2, message: error.message))
        }
        let context = Unmanaged.passUnretained(state).toOpaque()

        var headerList: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers { headerList = curl_slist_append(headerList, "\(name): \(value)") }
        // No "Expect: 100-continue" round trip before uploads.
        headerList = curl_slist_append(headerList, "Expect:")
        defer { curl_slist_free_all(headerList) }

        moments_curl_set_string(handle, CURLOPT_URL, request.url)
        moments_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        moments_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT, request.connectTimeout)
        moments_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        moments_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, request.stallTimeout)
        if let total = request.totalTimeout { moments_curl_set_long(handle, CURLOPT_TIMEOUT, total) }
        moments_curl_set_slist(handle, CURLOPT_HTTPHEADER, headerList)
        moments_curl_set_header_function(handle) { buffer, size, count, context in
            let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
            state.header(UnsafeRawBufferPointer(start: buffer, count: size * count))
            return size * count
        }
        moments_curl_set_pointer(handle, CURLOPT_HEADERDATA, context)
        moments_curl_set_write_function(handle) { buffer, size, count, context in
            let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
            return state.write(UnsafeRawBufferPointer(start: buffer, count: size * count)) ? size * count : 0
        }
        moments_curl_set_pointer(handle, CURLOPT_WRITEDATA, context)

        switch request.method {
        case "GET": moments_curl_set_long(handle, CURLOPT_HTTPGET, 1)
        case "HEAD": moments_curl_set_long(handle, CURLOPT_NOBODY, 1)
        case "PUT", "POST":
            moments_curl_set_long(handle, CURLOPT_UPLOAD, 1)
            moments_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
            moments_curl_set_off(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(state.uploadLength))
            moments_curl_set_read_function(handle) { buffer, size, count, context in
                let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
                return state.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
            }
            moments_curl_set_pointer(handle, CURLOPT_READDATA, context)
        default: moments_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        }

        let code = curl_easy_perform(handle)
        if let failure = state.failure { return .failure(CurlFailure(code: -2, message: failure)) }
        guard code == CURLE_OK else {
            return .failure(CurlFailure(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code))))
        }
        var status = 0
        moments_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(CurlResponse(status: status, headers: state.headers, body: state.memory))
    }
}

/// The state one transfer's callbacks share. Used by one curl call on one thread.
private final class TransferState {
    var headers: [String: String] = [:]
    var memory: [UInt8] = []
    var failure: String?
    var uploadLength: Int64 = 0
    private var status = 0
    private var uploadBytes: [UInt8] = []
    private var uploadPosition = 0
    private var input: FileHandle?
    private var uploadRemaining: Int64 = 0
    private var output: FileHandle?
    private static let memoryLimit = 64 * 1024

    func open(_ request: CurlRequest) throws(StorageError) {
        switch request.body {
        case .none: break
        case .bytes(let bytes):
            uploadBytes = bytes
            uploadLength = Int64(bytes.count)
        case .file(let url, let offset, let length):
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw StorageError(.ioError, "The file \(url.lastPathComponent) could not be opened for upload.")
            }
            do { try handle.seek(toOffset: UInt64(offset)) } catch {
                throw StorageError(.ioError, "The file \(url.lastPathComponent) could not be read.")
            }
            input = handle
            uploadLength = length
            uploadRemaining = length
        }
        if case .file(let url) = request.sink {
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: url.path) else {
                throw StorageError(.ioError, "The file \(url.lastPathComponent) could not be created.")
            }
            output = handle
        }
    }

    func close() {
        try? input?.close()
        try? output?.close()
    }

    func header(_ line: UnsafeRawBufferPointer) {
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("HTTP/") {
            // A new response (after a redirect or a 100): forget the previous one's headers.
            status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            headers = [:]
        } else if let colon = text.firstIndex(of: ":") {
            headers[text[..<colon].lowercased()] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let output, (200..<300).contains(status) {
            do { try output.write(contentsOf: Data(bytes)) } catch {
                failure = "The download could not be written to disk (is it full?)."
                return false
            }
            return true
        }
        if memory.count < Self.memoryLimit { memory.append(contentsOf: bytes.prefix(Self.memoryLimit - memory.count)) }
        return true
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        if let input {
            let wanted = Int(min(Int64(buffer.count), uploadRemaining))
            guard wanted > 0 else { return 0 }
            guard let data = try? input.read(upToCount: wanted), !data.isEmpty else {
                failure = "The file being uploaded ended early or could not be read."
                return moments_curl_read_abort()
            }
            data.copyBytes(to: buffer.bindMemory(to: UInt8.self), count: data.count)
            uploadRemaining -= Int64(data.count)
            return data.count
        }
        let count = min(buffer.count, uploadBytes.count - uploadPosition)
        uploadBytes[uploadPosition..<(uploadPosition + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
        uploadPosition += count
        return count
    }
}
