import CCurl
import Dispatch
import Foundation

/// HTTP over libcurl, for S3, webhooks and the health check: each exchange on a thread of its own.
public enum Curl {
    private static let initialized: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()
    private static let queue = DispatchQueue(label: "moments.curl", attributes: .concurrent)

    /// Performs the request on a thread of its own (curl blocks) and returns the reply. Cancelling
    /// the calling task stops the transfer within curl's next progress call (about a second at
    /// most, sooner while bytes flow) with `CurlFailure.isCancelled`.
    public static func perform(_ request: CurlRequest) async -> Result<CurlResponse, CurlFailure> {
        let state = TransferState()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: performBlocking(request, state: state)) }
            }
        } onCancel: {
            state.cancel()
        }
    }

    private static func performBlocking(_ request: CurlRequest, state: TransferState) -> Result<CurlResponse, CurlFailure> {
        if state.isCancelled { return .failure(CurlFailure(code: CurlFailure.cancelledCode, message: "the transfer was cancelled")) }
        guard initialized, let handle = curl_easy_init() else {
            return .failure(CurlFailure(code: -1, message: "libcurl could not be initialised"))
        }
        defer { curl_easy_cleanup(handle) }
        defer { state.close() }
        do {
            try state.open(request)
        } catch {
            return .failure(error)
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
        if request.http2 { moments_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)) }
        if let caFile = request.caFile { moments_curl_set_string(handle, CURLOPT_CAINFO, caFile) }
        var pinned: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(pinned) }
        if let destination = request.destination {
            let address = destination.address.contains(":") ? "[\(destination.address)]" : destination.address
            pinned = curl_slist_append(nil, "\(destination.host):\(destination.port):\(address)")
            moments_curl_set_slist(handle, CURLOPT_RESOLVE, pinned)
            moments_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            moments_curl_set_string(handle, CURLOPT_NOPROXY, "*")
            moments_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        }
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
        // Called about once a second, and as bytes move: a cancelled task's transfer stops here.
        moments_curl_set_progress_function(handle) { context, _, _, _, _ in
            Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue().isCancelled ? 1 : 0
        }
        moments_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context)
        moments_curl_set_long(handle, CURLOPT_NOPROGRESS, 0)

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
        if code == CURLE_ABORTED_BY_CALLBACK && state.isCancelled {
            return .failure(CurlFailure(code: CurlFailure.cancelledCode, message: "the transfer was cancelled"))
        }
        if let failure = state.failure { return .failure(failure) }
        guard code == CURLE_OK else {
            return .failure(CurlFailure(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code))))
        }
        var status = 0
        moments_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(CurlResponse(status: status, headers: state.headers, body: state.memory))
    }
}
