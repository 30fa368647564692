import Foundation
import NIOCore

/// What a `multipart/form-data` body may hold besides its total size (`MAX_UPLOAD_BYTES`, checked
/// by the caller as bytes arrive): everything the reader keeps in memory is bounded by these.
struct FormLimits: Sendable {
    /// Bytes of one part's header lines (its `Content-Disposition` and friends).
    var headerBytesPerPart = 8 * 1024
    /// Parts in one body, the file included.
    var parts = 16
    /// Bytes of one text field.
    var fieldBytes = 1024
    /// Bytes of all text fields together.
    var fieldBytesTotal = 8 * 1024
    /// Bytes before the first boundary, and after the closing one.
    var preambleBytes = 16 * 1024
    /// Bytes of the `music` part (a track of 10 minutes as a 320 kbit/s MP3 is 24 MB; as WAV, 100 MB).
    var musicBytes: Int64 = 64 << 20
}

/// Why a form was refused; `UploadController` turns each into a status, a code and a sentence.
enum FormFailure: Error, Equatable {
    /// The bytes are not multipart as declared (the detail says where).
    case malformed(String)
    /// The body ended before its closing boundary: the upload is incomplete.
    case truncated
    case headersTooLarge(limit: Int)
    case tooManyParts(limit: Int)
    case fieldTooLong(name: String, limit: Int)
    case fieldsTooLarge(limit: Int)
    /// A second part named `file`.
    case secondFile
    /// A second part named `music`.
    case secondMusic
    /// A `music` part over `FormLimits.musicBytes`.
    case musicTooLarge(limit: Int64)
}

/// A streaming `multipart/form-data` reader: the part named `file` goes to `writeFile` as it
/// arrives, the one named `music` (a soundtrack, API 1.2) to `writeMusic`, the other parts are
/// kept as text. Nothing grows with the input beyond `FormLimits`:
/// at most one chunk plus a boundary's length (or one part's headers) is held at a time.
struct FormReader {
    struct Form: Equatable {
        var filename: String?
        var fileBytes: Int64 = 0
        var fields: [String: String] = [:]
        /// The `music` part's file name and length, when there is one.
        var musicFilename: String?
        var musicBytes: Int64 = 0
    }

    private enum Part {
        case file
        case music
        case field(name: String, bytes: [UInt8])
        /// A part without a name: counted, its bytes dropped.
        case unnamed
    }

    private enum State {
        case preamble(discarded: Int)
        case afterDelimiter
        case headers
        case body(Part)
        case epilogue(bytes: Int)
    }

    let limits: FormLimits
    private let delimiter: [UInt8]
    private let writeFile: (UnsafeRawBufferPointer) throws -> Void
    private let writeMusic: (UnsafeRawBufferPointer) throws -> Void
    private var state = State.preamble(discarded: 0)
    /// Bytes received and not yet consumed; starts with the CRLF the first delimiter may lack.
    private var pending: [UInt8] = Array("\r\n".utf8)
    private var parts = 0
    private var fieldBytes = 0
    private(set) var form = Form()

    /// `boundary` as the `Content-Type` gives it (1–70 characters, RFC 2046).
    init(
        boundary: String, limits: FormLimits = FormLimits(), writeFile: @escaping (UnsafeRawBufferPointer) throws -> Void,
        writeMusic: @escaping (UnsafeRawBufferPointer) throws -> Void = { _ in }
    ) {
        self.limits = limits
        delimiter = Array("\r\n--\(boundary)".utf8)
        self.writeFile = writeFile
        self.writeMusic = writeMusic
    }

    /// Reads the next bytes of the body. Errors from `writeFile` pass through as they are.
    mutating func consume(_ buffer: ByteBuffer) throws {
        pending.append(contentsOf: buffer.readableBytesView)
        var index = 0
        defer { pending.removeSubrange(0..<index) }
        while try step(&index) {}
    }

    /// The form, once the body has ended; refuses a body that stopped before its closing boundary.
    func finish() throws(FormFailure) -> Form {
        guard case .epilogue = state else { throw .truncated }
        return form
    }

    /// Consumes what it can from `pending[index...]`; false when it needs more bytes.
    private mutating func step(_ index: inout Int) throws -> Bool {
        let available = pending.count - index
        switch state {
        case .preamble(let discarded):
            if let found = find(delimiter, from: index) {
                index = found + delimiter.count
                state = .afterDelimiter
                return true
            }
            let skipped = max(0, available - (delimiter.count - 1))
            index += skipped
            guard discarded + skipped <= limits.preambleBytes else {
                throw FormFailure.malformed("no boundary in its first \(limits.preambleBytes / 1024) KiB")
            }
            state = .preamble(discarded: discarded + skipped)
            return false

        case .afterDelimiter:
            // "--" closes the body; otherwise optional padding and a CRLF open the next part.
            var cursor = index
            while cursor < pending.count, pending[cursor] == UInt8(ascii: " ") || pending[cursor] == UInt8(ascii: "\t") {
                cursor += 1
                if cursor - index > 64 { throw FormFailure.malformed("a boundary is followed by neither CRLF nor --") }
            }
            guard cursor + 2 <= pending.count else { return false }
            if pending[index] == UInt8(ascii: "-") && pending[index + 1] == UInt8(ascii: "-") {
                index += 2
                state = .epilogue(bytes: 0)
                return true
            }
            guard pending[cursor] == 13, pending[cursor + 1] == 10 else {
                throw FormFailure.malformed("a boundary is followed by neither CRLF nor --")
            }
            index = cursor + 2
            parts += 1
            guard parts <= limits.parts else { throw FormFailure.tooManyParts(limit: limits.parts) }
            state = .headers
            return true

        case .headers:
            // The header lines end at an empty line; a part may have none at all.
            let end: Int
            if available >= 2, pending[index] == 13, pending[index + 1] == 10 {
                end = index
            } else if let found = find(Self.blankLine, from: index), found - index <= limits.headerBytesPerPart {
                end = found + 2
            } else {
                if available > limits.headerBytesPerPart + 4 { throw FormFailure.headersTooLarge(limit: limits.headerBytesPerPart) }
                return false
            }
            let part = try part(headers: pending[index..<end])
            index = end + 2
            state = .body(part)
            return true

        case .body(var part):
            let found = find(delimiter, from: index)
            let bodyEnd = found ?? max(index, pending.count - (delimiter.count - 1))
            if bodyEnd > index { try take(pending[index..<bodyEnd], into: &part) }
            index = bodyEnd
            guard let found else {
                state = .body(part)
                return false
            }
            index = found + delimiter.count
            if case .field(let name, let bytes) = part { form.fields[name] = String(decoding: bytes, as: UTF8.self) }
            state = .afterDelimiter
            return true

        case .epilogue(let bytes):
            index = pending.count
            guard bytes + available <= limits.preambleBytes else {
                throw FormFailure.malformed("more than \(limits.preambleBytes / 1024) KiB follow the closing boundary")
            }
            state = .epilogue(bytes: bytes + available)
            return false
        }
    }

    private static let blankLine: [UInt8] = Array("\r\n\r\n".utf8)

    /// The part its header lines describe.
    private mutating func part(headers: ArraySlice<UInt8>) throws -> Part {
        var name: String?
        var filename: String?
        for line in headers.split(separator: 10, omittingEmptySubsequences: true) {
            let text = String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
                text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            else {
                throw FormFailure.malformed("a part's header line is not 'Name: value'")
            }
            guard text[..<colon].lowercased() == "content-disposition" else { continue }
            let value = String(text[text.index(after: colon)...])
            name = Self.parameter("name", in: value)
            filename = Self.parameter("filename", in: value)
        }
        switch name {
        case "file":
            guard form.filename == nil else { throw FormFailure.secondFile }
            form.filename = filename ?? "upload.mp4"
            return .file
        case "music":
            guard form.musicFilename == nil else { throw FormFailure.secondMusic }
            form.musicFilename = filename ?? "music"
            return .music
        case let name?:
            return .field(name: name, bytes: [])
        case nil:
            return .unnamed
        }
    }

    private mutating func take(_ bytes: ArraySlice<UInt8>, into part: inout Part) throws {
        switch part {
        case .file:
            form.fileBytes += Int64(bytes.count)
            try bytes.withUnsafeBytes { try writeFile($0) }
        case .music:
            form.musicBytes += Int64(bytes.count)
            guard form.musicBytes <= limits.musicBytes else { throw FormFailure.musicTooLarge(limit: limits.musicBytes) }
            try bytes.withUnsafeBytes { try writeMusic($0) }
        case .field(let name, var value):
            fieldBytes += bytes.count
            guard value.count + bytes.count <= limits.fieldBytes else { throw FormFailure.fieldTooLong(name: name, limit: limits.fieldBytes) }
            guard fieldBytes <= limits.fieldBytesTotal else { throw FormFailure.fieldsTooLarge(limit: limits.fieldBytesTotal) }
            value.append(contentsOf: bytes)
            part = .field(name: name, bytes: value)
        case .unnamed:
            fieldBytes += bytes.count
            guard fieldBytes <= limits.fieldBytesTotal else { throw FormFailure.fieldsTooLarge(limit: limits.fieldBytesTotal) }
        }
    }

    /// The first occurrence of `needle` in `pending[from...]`: `memchr` to each candidate first
    /// byte, then a comparison. The delimiter holds its first byte (CR) once only, as a boundary's
    /// characters are never CR (`UploadController.boundary`), so a failed comparison never passes
    /// the next candidate and the search stays linear whatever the bytes.
    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        pending.withUnsafeBytes { haystack -> Int? in
            guard let base = haystack.baseAddress else { return nil }
            var cursor = start
            while haystack.count - cursor >= needle.count {
                guard let hit = memchr(base + cursor, Int32(needle[0]), haystack.count - cursor - needle.count + 1) else { return nil }
                let position = base.distance(to: UnsafeRawPointer(hit))
                var matched = 1
                while matched < needle.count, haystack[position + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return position }
                cursor = position + 1
            }
            return nil
        }
    }

    /// A `key=value` or `key="value"` parameter of a header such as `Content-Disposition`.
    static func parameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";") {
            let pair = piece.trimmingCharacters(in: .whitespaces)
            guard pair.lowercased().hasPrefix("\(key)=") else { continue }
            return String(pair.dropFirst(key.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }
}
