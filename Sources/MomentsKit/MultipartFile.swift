import Foundation
import MomentsContract
import MomentsModel

/// A multipart/form-data body written to a temporary file, the video copied into it in chunks, so
/// an upload of any size is sent from disk and never held in memory.
struct MultipartFile {
    var url: URL
    var boundary: String
    var size: Int64

    /// The form: `fields`, then `music` (a track of the app's own) in a part named `music`, then
    /// `file` in the part named `file`, copied a chunk at a time.
    static func write(file: URL, fields: [(String, String)], music: URL? = nil, chunkSize: Int = 1 << 20) throws(MomentsClientError) -> MultipartFile
    {
        let boundary = "moments-\(UUID().uuidString)"
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("moments-upload-\(UUID().uuidString).multipart")
        var reading = file
        do {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown)
            }
            let output = try FileHandle(forWritingTo: url)
            defer { try? output.close() }
            var head = ""
            for (name, value) in fields {
                head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
            }
            func part(_ name: String, _ source: URL, type: String) throws {
                reading = source
                let input = try FileHandle(forReadingFrom: source)
                defer { try? input.close() }
                let filename = source.lastPathComponent.replacingOccurrences(of: "\"", with: "'")
                head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n"
                head += "Content-Type: \(type)\r\n\r\n"
                try output.write(contentsOf: Data(head.utf8))
                while let chunk = try input.read(upToCount: chunkSize), !chunk.isEmpty {
                    try output.write(contentsOf: chunk)
                }
                head = "\r\n"
            }
            if let music { try part("music", music, type: "application/octet-stream") }
            try part("file", file, type: "video/mp4")
            try output.write(contentsOf: Data("\r\n--\(boundary)--\r\n".utf8))
            let size = Int64(try output.offset())
            return MultipartFile(url: url, boundary: boundary, size: size)
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw MomentsClientError(
                kind: .file, code: "file_unreadable",
                message: "Could not prepare \(reading.lastPathComponent) for upload: \(error.localizedDescription)")
        }
    }
}

/// Splits a `text/event-stream` body into events as bytes arrive.
final class EventStreamParser: @unchecked Sendable {
    struct Event: Equatable {
        var name: String
        var data: String
    }

    private var buffer = ""
    private let lock = NSLock()

    func feed(_ chunk: Data) -> [Event] {
        lock.withLock {
            buffer += String(decoding: chunk, as: UTF8.self)
            buffer = buffer.replacingOccurrences(of: "\r\n", with: "\n")
            var events: [Event] = []
            while let end = buffer.range(of: "\n\n") {
                let block = buffer[..<end.lowerBound]
                buffer.removeSubrange(..<end.upperBound)
                var name = "message", data: [String] = []
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { continue }  // a comment (keep-alive)
                    let field = line.prefix { $0 != ":" }
                    var value = line.dropFirst(field.count).dropFirst()
                    if value.hasPrefix(" ") { value = value.dropFirst() }
                    switch field {
                    case "event": name = String(value)
                    case "data": data.append(String(value))
                    default: break
                    }
                }
                if !data.isEmpty { events.append(Event(name: name, data: data.joined(separator: "\n"))) }
            }
            return events
        }
    }
}
