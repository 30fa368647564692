import CCurl
import Foundation
import Synchronization

/// The state one transfer's callbacks share. Used by one curl call on one thread, except the
/// cancellation flag, which the calling task sets.
final class TransferState: @unchecked Sendable {
    private let cancelled = Atomic<Bool>(false)
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    var headers: [String: String] = [:]
    var memory: [UInt8] = []
    var failure: CurlFailure?
    var uploadLength: Int64 = 0
    private var status = 0
    private var uploadBytes: [UInt8] = []
    private var uploadPosition = 0
    private var input: FileHandle?
    private var uploadRemaining: Int64 = 0
    private var output: FileHandle?
    private var received: Int64 = 0
    private var limit: Int64?
    private static let memoryLimit = 64 * 1024

    func open(_ request: CurlRequest) throws(CurlFailure) {
        switch request.body {
        case .none: break
        case .bytes(let bytes):
            uploadBytes = bytes
            uploadLength = Int64(bytes.count)
        case .file(let url, let offset, let length):
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw CurlFailure(code: CurlFailure.localCode, message: "The file \(url.lastPathComponent) could not be opened for upload.")
            }
            do { try handle.seek(toOffset: UInt64(offset)) } catch {
                throw CurlFailure(code: CurlFailure.localCode, message: "The file \(url.lastPathComponent) could not be read.")
            }
            input = handle
            uploadLength = length
            uploadRemaining = length
        }
        switch request.sink {
        case .memory: break
        case .bytes(let limit): self.limit = Int64(limit)
        case .file(let url, let limit):
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                let handle = FileHandle(forWritingAtPath: url.path)
            else {
                throw CurlFailure(code: CurlFailure.localCode, message: "The file \(url.lastPathComponent) could not be created.")
            }
            output = handle
            self.limit = limit
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
        guard (200..<300).contains(status) else {
            if memory.count < Self.memoryLimit { memory.append(contentsOf: bytes.prefix(Self.memoryLimit - memory.count)) }
            return true
        }
        received += Int64(bytes.count)
        if let limit, received > limit {
            failure = CurlFailure(code: CurlFailure.tooLargeCode, message: "The reply is longer than the \(limit) bytes expected.")
            return false
        }
        if let output {
            do { try output.write(contentsOf: Data(bytes)) } catch {
                failure = CurlFailure(code: CurlFailure.localCode, message: "The download could not be written to disk (is it full?).")
                return false
            }
            return true
        }
        if limit != nil {
            memory.append(contentsOf: bytes)
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
                failure = CurlFailure(code: CurlFailure.localCode, message: "The file being uploaded ended early or could not be read.")
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
