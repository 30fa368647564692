import Crypto
import CurlHTTP
import Foundation
import MomentsModel
import MomentsSupport

/// Objects in an S3-compatible bucket (AWS S3, Cloudflare R2, SeaweedFS, MinIO), over libcurl with
/// our own SigV4 signer.
///
/// Bodies stream between files and the network. Objects at or above `multipartThreshold` go up in
/// equal-size parts and the upload is aborted if any part fails. Timeouts, dropped connections, 429
/// and 5xx are retried with exponential backoff and jitter; 403 and 404 become clear errors.
public struct S3ObjectStore: ResumableObjectStore {
    public let configuration: S3Configuration
    let signer: SigV4Signer

    public init(configuration: S3Configuration) {
        self.configuration = configuration
        self.signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
    }

    // MARK: ObjectStore

    public func put(key: String, from file: URL, contentType: String) async throws(StorageError) -> ObjectInfo {
        try ObjectKey.validate(key)
        let size = try Self.fileSize(file)
        if size >= configuration.multipartThreshold {
            try await multipartUpload(key: key, file: file, size: size, contentType: contentType)
        } else {
            let hash = try await BlockingWork.run { () throws(StorageError) in try Self.sha256(file, offset: 0, length: size) }
            _ = try await send(
                "PUT", key: key, headers: [("Content-Type", contentType)], payloadHash: hash,
                body: .file(file, offset: 0, length: size), what: "store \(key)")
        }
        return ObjectInfo(key: key, size: size, contentType: contentType)
    }

    public func get(key: String, to file: URL, limit: Int64?) async throws(StorageError) -> ObjectInfo {
        try ObjectKey.validate(key)
        // Into a temporary file beside the destination, renamed when complete: never a half file.
        let partial = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString).part")
        defer { try? FileManager.default.removeItem(at: partial) }
        let response = try await send("GET", key: key, sink: .file(partial, limit: limit), what: "fetch \(key)")
        let size = try Self.fileSize(partial)
        if let expected = response.headers["content-length"].flatMap(Int64.init), expected != size {
            throw StorageError(.unavailable, "The download of \(key) ended early (\(size) of \(expected) bytes).")
        }
        guard rename(partial.path, file.path) == 0 else {
            throw StorageError(.ioError, "The object \(key) could not be saved to \(file.lastPathComponent).")
        }
        return ObjectInfo(key: key, size: size, contentType: response.headers["content-type"])
    }

    public func read(key: String, offset: Int64, length: Int) async throws(StorageError) -> [UInt8] {
        try ObjectKey.validate(key)
        guard offset >= 0, length > 0 else { return [] }
        let response = try await send(
            "GET", key: key, headers: [("Range", "bytes=\(offset)-\(offset + Int64(length) - 1)")],
            sink: .bytes(limit: length), what: "read \(key)")
        return response.body
    }

    public func copy(from source: String, to key: String) async throws(StorageError) -> ObjectInfo {
        try ObjectKey.validate(source)
        try ObjectKey.validate(key)
        let origin = "/\(configuration.bucket)/\(SigV4Signer.encode(source, keepSlash: true))"
        let response = try await send("PUT", key: key, headers: [("x-amz-copy-source", origin)], what: "copy \(source) to \(key)")
        // S3 may answer 200 and report a failed copy in the body.
        if Self.xmlValue("Code", in: response.body) != nil {
            var failed = response
            failed.status = 500
            throw Self.error(for: failed, method: "PUT", what: "copy \(source) to \(key)", bucket: configuration.bucket)
        }
        return try await head(key: key)
    }

    public func list(prefix: String, after: String?, limit: Int) async throws(StorageError) -> [StoredObject] {
        var query = [("list-type", "2"), ("prefix", prefix), ("max-keys", String(max(1, min(limit, 1000))))]
        if let after { query.append(("start-after", after)) }
        let response = try await send("GET", key: nil, query: query, sink: .bytes(limit: 4 << 20), what: "list \(prefix)")
        let text = String(decoding: response.body, as: UTF8.self)
        return text.components(separatedBy: "<Contents>").dropFirst().compactMap { entry in
            let bytes = Array(entry.utf8)
            guard let key = Self.xmlValue("Key", in: bytes).map(Self.unescapeXML),
                let modified = Self.xmlValue("LastModified", in: bytes).flatMap(Self.timestamp)
            else { return nil }
            return StoredObject(key: key, size: Self.xmlValue("Size", in: bytes).flatMap(Int64.init) ?? 0, lastModified: modified)
        }
    }

    /// A listing's `LastModified`: AWS and R2 write milliseconds (`…T10:00:00.000Z`), some servers none.
    static func timestamp(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) ?? (try? Date(text, strategy: .iso8601))
    }

    /// XML text with its entities replaced: the five named ones and numeric references (`&#34;`,
    /// `&#x22;`: Go's encoder, SeaweedFS's, writes quotes that way).
    static func unescapeXML(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semi) <= 10 else {
                out += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let name = rest[rest.index(after: amp)..<semi]
            let named: [Substring: String] = ["lt": "<", "gt": ">", "quot": "\"", "apos": "'", "amp": "&"]
            if let value = named[name] {
                out += value
            } else if name.hasPrefix("#x") || name.hasPrefix("#X"), let code = UInt32(name.dropFirst(2), radix: 16), let scalar = Unicode.Scalar(code)
            {
                out.unicodeScalars.append(scalar)
            } else if name.hasPrefix("#"), let code = UInt32(name.dropFirst()), let scalar = Unicode.Scalar(code) {
                out.unicodeScalars.append(scalar)
            } else {
                out += rest[amp...semi]
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }

    public func head(key: String) async throws(StorageError) -> ObjectInfo {
        try ObjectKey.validate(key)
        let response = try await send("HEAD", key: key, what: "look up \(key)")
        return ObjectInfo(
            key: key, size: response.headers["content-length"].flatMap(Int64.init) ?? 0,
            contentType: response.headers["content-type"])
    }

    public func delete(key: String) async throws(StorageError) {
        try ObjectKey.validate(key)
        do {
            _ = try await send("DELETE", key: key, what: "delete \(key)")
        } catch  where error.code == .notFound {
            // Already gone.
        }
    }

    // MARK: Presigned URLs

    public var presigning: (any PresigningObjectStore)? { self }
    public var resumable: (any ResumableObjectStore)? { self }

    public func signedURL(for key: String, method: String, expires: Duration, contentLength: Int64?) throws(StorageError) -> URL {
        try presignedURL(key: key, method: method, expires: expires, contentLength: contentLength)
    }

    /// A URL anyone can use with plain HTTP to GET (download) or PUT (upload) the object until it
    /// expires. S3 allows at most 7 days. With `contentLength`, the length is a signed header: a
    /// PUT of any other length fails the signature check.
    public func presignedURL(
        key: String, method: String = "GET", expires: Duration, contentLength: Int64? = nil,
        query: [(name: String, value: String)] = [], date: Date = Date()
    ) throws(StorageError) -> URL {
        try ObjectKey.validate(key)
        let seconds = Int(expires.components.seconds)
        guard (1...604_800).contains(seconds) else {
            throw StorageError(.invalidKey, "A presigned URL must expire within 1 second to 7 days.")
        }
        let target = location(key: key, query: [], endpoint: configuration.publicEndpoint ?? configuration.endpoint)
        let length = contentLength.map { [("Content-Length", String($0))] } ?? []
        let request = SigV4Request(
            method: method, path: target.path, query: query, headers: [("Host", target.host)] + length,
            payloadHash: SigV4Signer.unsignedPayload)
        let signature = signer.presign(request, date: date, expires: seconds)
        return URL(string: target.url(query: query + signature.additions))!
    }

    // MARK: Resumable uploads

    public func startUpload(key: String, contentType: String) async throws(StorageError) -> String {
        try ObjectKey.validate(key)
        return try await startMultipartUpload(key: key, contentType: contentType)
    }

    public func signedPartURL(key: String, uploadID: String, part: Int, expires: Duration, contentLength: Int64) throws(StorageError) -> URL {
        try presignedURL(
            key: key, method: "PUT", expires: expires, contentLength: contentLength,
            query: [("partNumber", String(part)), ("uploadId", uploadID)])
    }

    public func uploadedParts(key: String, uploadID: String) async throws(StorageError) -> [UploadedPart] {
        var parts: [UploadedPart] = []
        var marker: String? = nil
        while true {
            var query = [("uploadId", uploadID), ("max-parts", "1000")]
            if let marker { query.append(("part-number-marker", marker)) }
            let response = try await send("GET", key: key, query: query, what: "list the parts of \(key)")
            let text = String(decoding: response.body, as: UTF8.self)
            for chunk in text.components(separatedBy: "<Part>").dropFirst() {
                let bytes = Array(chunk.utf8)
                guard let number = Self.xmlValue("PartNumber", in: bytes).flatMap(Int.init),
                    let etag = Self.xmlValue("ETag", in: bytes).map(Self.unescapeXML),
                    let size = Self.xmlValue("Size", in: bytes).flatMap(Int64.init)
                else { continue }
                parts.append(UploadedPart(number: number, size: size, etag: etag))
            }
            guard Self.xmlValue("IsTruncated", in: response.body) == "true",
                let next = Self.xmlValue("NextPartNumberMarker", in: response.body)
            else { break }
            marker = next
        }
        return parts.sorted { $0.number < $1.number }
    }

    public func completeUpload(key: String, uploadID: String, parts: [UploadedPart]) async throws(StorageError) {
        let items = parts.map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(Self.escapeXML($0.etag))</ETag></Part>" }
        let xml = Array("<CompleteMultipartUpload>\(items.joined())</CompleteMultipartUpload>".utf8)
        let completed = try await send(
            "POST", key: key, query: [("uploadId", uploadID)], headers: [("Content-Type", "application/xml")],
            payloadHash: Hex.lowercase(SHA256.hash(data: xml)), body: .bytes(xml),
            what: "finish the upload of \(key)")
        // S3 may answer 200 and still report an error in the body.
        if let code = Self.xmlValue("Code", in: completed.body) {
            throw StorageError(.ioError, "The storage service could not assemble \(key) (\(code)).")
        }
    }

    static func escapeXML(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    // MARK: Multipart

    /// Multipart uploads started under `prefix` and neither completed nor aborted (a crashed
    /// process leaves them; they cost storage until aborted or expired by a lifecycle rule).
    public func unfinishedUploads(
        prefix: String, after marker: UploadListMarker?,
        limit: Int
    ) async throws(StorageError) -> (uploads: [UnfinishedUpload], next: UploadListMarker?) {
        var query = [("uploads", ""), ("prefix", prefix), ("max-uploads", String(max(1, min(limit, 1000))))]
        if let key = marker?.key { query.append(("key-marker", key)) }
        if let uploadID = marker?.uploadID { query.append(("upload-id-marker", uploadID)) }
        let response = try await send("GET", key: nil, query: query, what: "list unfinished uploads")
        let text = String(decoding: response.body, as: UTF8.self)
        let sections = text.components(separatedBy: "<Upload>")
        let uploads = sections.dropFirst().compactMap { upload -> UnfinishedUpload? in
            let bytes = Array(upload.utf8)
            guard let key = Self.xmlValue("Key", in: bytes).map(Self.unescapeXML), let id = Self.xmlValue("UploadId", in: bytes) else { return nil }
            return UnfinishedUpload(key: key, uploadID: id, initiated: Self.xmlValue("Initiated", in: bytes).flatMap(Self.timestamp))
        }
        // The page's own fields come before its uploads (and, in some servers, after them).
        let fields = Array((sections.first ?? "").utf8) + Array((sections.last?.components(separatedBy: "</Upload>").last ?? "").utf8)
        guard Self.xmlValue("IsTruncated", in: fields) == "true", !uploads.isEmpty else { return (uploads, nil) }
        let nonEmpty = { (value: String?) in value.flatMap { $0.isEmpty ? nil : $0 } }
        let next = UploadListMarker(
            key: nonEmpty(Self.xmlValue("NextKeyMarker", in: fields)).map(Self.unescapeXML),
            uploadID: nonEmpty(Self.xmlValue("NextUploadIdMarker", in: fields)))
        // A server that names no place to go on, or the same again, ends the listing there.
        return (uploads, next == UploadListMarker(key: nil, uploadID: nil) || next == marker ? nil : next)
    }

    /// Starts a multipart upload; returns its id.
    func startMultipartUpload(key: String, contentType: String) async throws(StorageError) -> String {
        let created = try await send(
            "POST", key: key, query: [("uploads", "")], headers: [("Content-Type", contentType)],
            what: "start the upload of \(key)")
        guard let uploadID = Self.xmlValue("UploadId", in: created.body) else {
            throw StorageError(.unavailable, "The storage service did not start a multipart upload for \(key).")
        }
        return uploadID
    }

    /// Aborts an unfinished multipart upload, freeing its parts.
    public func abortUpload(key: String, uploadID: String) async throws(StorageError) {
        _ = try await send("DELETE", key: key, query: [("uploadId", uploadID)], what: "abort the upload of \(key)")
    }

    private func multipartUpload(key: String, file: URL, size: Int64, contentType: String) async throws(StorageError) {
        let partSize = max(configuration.partSize, (size + 9_999) / 10_000)
        let uploadID = try await startMultipartUpload(key: key, contentType: contentType)
        do throws(StorageError) {
            var etags: [String] = []
            var offset: Int64 = 0
            while offset < size {
                let length = min(partSize, size - offset)
                let number = etags.count + 1
                let hash = try await BlockingWork.run { [offset] () throws(StorageError) in try Self.sha256(file, offset: offset, length: length) }
                let response = try await send(
                    "PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                    payloadHash: hash, body: .file(file, offset: offset, length: length),
                    what: "upload part \(number) of \(key)")
                guard let etag = response.headers["etag"] else {
                    throw StorageError(.unavailable, "The storage service returned no ETag for part \(number) of \(key).")
                }
                etags.append(etag)
                offset += length
            }
            let parts = etags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>" }
            let xml = Array("<CompleteMultipartUpload>\(parts.joined())</CompleteMultipartUpload>".utf8)
            let completed = try await send(
                "POST", key: key, query: [("uploadId", uploadID)],
                headers: [("Content-Type", "application/xml")],
                payloadHash: Hex.lowercase(SHA256.hash(data: xml)), body: .bytes(xml),
                what: "finish the upload of \(key)")
            // S3 may answer 200 and still report an error in the body.
            if let code = Self.xmlValue("Code", in: completed.body) {
                throw StorageError(.unavailable, "The storage service could not assemble \(key) (\(code)).")
            }
        } catch {
            _ = try? await send("DELETE", key: key, query: [("uploadId", uploadID)], what: "abort the upload of \(key)")
            throw error
        }
    }

    // MARK: Requests

    struct Target {
        var scheme: String
        var host: String
        /// Unencoded path, as SigV4 wants it.
        var path: String

        func url(query: [(name: String, value: String)]) -> String {
            let encodedQuery = query.map { item in
                "\(SigV4Signer.encode(item.name, keepSlash: false))=\(SigV4Signer.encode(item.value, keepSlash: false))"
            }
            return "\(scheme)://\(host)\(SigV4Signer.encode(path, keepSlash: true))"
                + (query.isEmpty ? "" : "?" + encodedQuery.joined(separator: "&"))
        }
    }

    /// Where a request goes: the object `key`, or the bucket itself when `key` is nil; at `endpoint`
    /// (the configured one unless a presigned URL asks for the public one).
    func location(key: String?, query: [(name: String, value: String)], endpoint: URL? = nil) -> Target {
        let endpoint = endpoint ?? configuration.endpoint
        let scheme = endpoint.scheme ?? "https"
        var host = endpoint.host ?? ""
        if let port = endpoint.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) { host += ":\(port)" }
        let base = endpoint.path.hasSuffix("/") ? String(endpoint.path.dropLast()) : endpoint.path
        let object = key.map { "/\($0)" } ?? "/"
        switch configuration.addressing {
        case .path: return Target(scheme: scheme, host: host, path: "\(base)/\(configuration.bucket)\(object)")
        case .virtualHosted: return Target(scheme: scheme, host: "\(configuration.bucket).\(host)", path: "\(base)\(object)")
        }
    }

    /// Signs and sends one request, retrying transient failures. Throws for anything but 2xx.
    func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], payloadHash: String = SigV4Signer.emptyPayloadHash,
        body: CurlRequest.Body = .none, sink: CurlRequest.Sink = .memory, what: String
    ) async throws(StorageError) -> CurlResponse {
        let target = location(key: key, query: query)
        var attempt = 1
        while true {
            let signed = SigV4Request(
                method: method, path: target.path, query: query,
                headers: [("Host", target.host)] + headers, payloadHash: payloadHash)
            let signature = signer.signHeaders(signed, date: Date(), includeContentHashHeader: true)
            let request = CurlRequest(
                method: method, url: target.url(query: query),
                headers: headers + signature.additions, body: body, sink: sink,
                stallTimeout: configuration.stallSeconds)
            let retryable: String
            switch await Curl.perform(request) {
            case .success(let response) where (200..<300).contains(response.status):
                return response
            case .success(let response):
                let error = Self.error(for: response, method: method, what: what, bucket: configuration.bucket)
                guard response.status == 429 || response.status >= 500 else { throw error }
                retryable = error.message
            case .failure(let failure):
                if failure.isCancelled { throw StorageError(.cancelled, "Cancelled while trying to \(what).") }
                if failure.code == CurlFailure.tooLargeCode { throw StorageError(.tooLarge, "Could not \(what): \(failure.message)") }
                guard failure.code >= 0 else { throw StorageError(.ioError, failure.message) }
                let reason = "The storage service could not be reached to \(what) (\(failure.message))."
                guard failure.isTransient else { throw StorageError(.unavailable, reason) }
                retryable = reason
            }
            guard attempt < configuration.maxAttempts, !Task.isCancelled else { throw StorageError(.unavailable, retryable) }
            // 0.2 s, 0.4 s, 0.8 s … (at most 5 s) times [0.5, 1).
            try? await Task.sleep(for: Backoff.delay(afterAttempt: attempt, first: .milliseconds(200), cap: .seconds(5)))
            attempt += 1
        }
    }

    /// A readable error for a non-2xx reply: S3's own code decides the sentence.
    static func error(for response: CurlResponse, method: String, what: String, bucket: String) -> StorageError {
        let code = xmlValue("Code", in: response.body) ?? ""
        switch (response.status, code) {
        case (403, "SignatureDoesNotMatch"):
            return StorageError(.forbidden, "The storage service rejected our signature: check S3_SECRET_ACCESS_KEY.")
        case (403, "InvalidAccessKeyId"):
            return StorageError(.forbidden, "The storage service does not know our access key: check S3_ACCESS_KEY_ID.")
        case (403, "RequestTimeTooSkewed"):
            return StorageError(.forbidden, "The storage service says this machine's clock is wrong by more than 15 minutes; fix the clock (NTP).")
        case (403, "AccessDenied"), (403, ""):
            return StorageError(
                .forbidden, "The storage service refused to let us \(what): check the credentials, the clock and the bucket's permissions.")
        case (403, _):
            return StorageError(.forbidden, "The storage service refused to let us \(what) (\(code)).")
        case (404, "NoSuchBucket"):
            return StorageError(.notFound, "The bucket \(bucket) does not exist.")
        case (404, "NoSuchUpload"):
            return StorageError(.notFound, "The multipart upload is gone (aborted or expired).")
        case (404, _):
            return StorageError(.notFound, "There is no object to \(what).")
        case (400, _), (409, _), (411, _), (412, _), (416, _):
            return StorageError(.ioError, "The storage service refused to \(what) (HTTP \(response.status)\(code.isEmpty ? "" : ", \(code)")).")
        default:
            return StorageError(.unavailable, "The storage service failed to \(what) (HTTP \(response.status)\(code.isEmpty ? "" : ", \(code)")).")
        }
    }

    static func xmlValue(_ element: String, in body: [UInt8]) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        guard let start = text.range(of: "<\(element)>"), let end = text.range(of: "</\(element)>", range: start.upperBound..<text.endIndex) else {
            return nil
        }
        return String(text[start.upperBound..<end.lowerBound])
    }

    // MARK: Files

    static func fileSize(_ file: URL) throws(StorageError) -> Int64 {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
            let size = attributes[.size] as? NSNumber
        else {
            throw StorageError(.ioError, "The file \(file.lastPathComponent) does not exist or is not a regular file.")
        }
        return size.int64Value
    }

    /// SHA-256 of a byte range, read in 1 MiB pieces.
    static func sha256(_ file: URL, offset: Int64, length: Int64) throws(StorageError) -> String {
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw StorageError(.ioError, "The file \(file.lastPathComponent) could not be read.")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        do {
            try handle.seek(toOffset: UInt64(offset))
            var remaining = length
            while remaining > 0 {
                guard let chunk = try handle.read(upToCount: Int(min(remaining, 1 << 20))), !chunk.isEmpty else {
                    throw StorageError(.ioError, "The file \(file.lastPathComponent) ended early.")
                }
                hasher.update(data: chunk)
                remaining -= Int64(chunk.count)
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.ioError, "The file \(file.lastPathComponent) could not be read.")
        }
        return Hex.lowercase(hasher.finalize())
    }
}
