import Foundation
import NIOCore
import Testing

@testable import API

/// The upload's multipart reader on its own: what it keeps, and that nothing it holds grows with
/// what a client sends.
@Suite("Multipart form reader")
struct FormReaderTests {
    static let boundary = "moments-4C1D"

    /// A body of `fields` then a `file` part holding `file`, closed.
    static func body(fields: [(String, String)] = [], file: [UInt8]?, close: Bool = true) -> [UInt8] {
        var body = Array("preamble a proxy may add\r\n".utf8)
        for (name, value) in fields {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        if let file {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"IMG_0001.MOV\"\r\n".utf8)
            body += Array("Content-Type: video/quicktime\r\n\r\n".utf8) + file + Array("\r\n".utf8)
        }
        if close { body += Array("--\(boundary)--\r\n".utf8) }
        return body
    }

    /// Feeds `body` in chunks of `chunk` bytes; returns the form (or the failure), the file's bytes
    /// and the most bytes the reader held between chunks.
    static func read(_ body: [UInt8], chunk: Int, limits: FormLimits = FormLimits()) -> (Result<FormReader.Form, Error>, [UInt8], consumed: Int) {
        var file: [UInt8] = []
        var reader = FormReader(boundary: boundary, limits: limits) { file.append(contentsOf: $0) }
        var consumed = 0
        do {
            for start in stride(from: 0, to: body.count, by: chunk) {
                let end = min(body.count, start + chunk)
                consumed = end
                try reader.consume(ByteBuffer(bytes: body[start..<end]))
            }
            return (.success(try reader.finish()), file, consumed)
        } catch {
            return (.failure(error), file, consumed)
        }
    }

    static func failure(_ result: Result<FormReader.Form, Error>) -> FormFailure? {
        if case .failure(let error) = result { return error as? FormFailure }
        return nil
    }

    @Test(
        "Fields and the file come through whole at every chunk size, near-boundaries in the video included",
        arguments: [1, 2, 3, 7, 64, 4096, 1 << 20])
    func roundTrip(chunk: Int) throws {
        // Video bytes that start like the delimiter again and again without being it: each prefix
        // is followed by bytes above 0x7F, which no boundary holds.
        var video: [UInt8] = []
        var random = SystemRandomNumberGenerator()
        for i in 0..<3000 {
            video += Array("\r\n--moments-4C1".utf8).prefix(i % 16)
            video += (0..<(1 + i % 13)).map { _ in UInt8.random(in: 0x80...0xFF, using: &random) }
        }
        let body = Self.body(fields: [("target_duration", "45"), ("quality", "medium"), ("note", "")], file: video)
        let (result, file, _) = Self.read(body, chunk: chunk)
        let form = try result.get()
        #expect(form.fields == ["target_duration": "45", "quality": "medium", "note": ""])
        #expect(form.filename == "IMG_0001.MOV")
        #expect(form.fileBytes == Int64(video.count))
        #expect(file == video)
    }

    @Test("A part's header with no line break is refused once it passes the limit, not at the end of the body")
    func endlessHeader() {
        var body = Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"".utf8)
        body += [UInt8](repeating: UInt8(ascii: "a"), count: 10 << 20)
        let (result, _, consumed) = Self.read(body, chunk: 16 * 1024)
        #expect(Self.failure(result) == .headersTooLarge(limit: 8 * 1024))
        #expect(consumed <= 32 * 1024, "refused after \(consumed) bytes")
    }

    @Test("200,000 tiny fields are refused at the 17th part")
    func fieldFlood() {
        var body: [UInt8] = []
        for i in 0..<200_000 { body += Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"f\(i)\"\r\n\r\nx\r\n".utf8) }
        let (result, _, consumed) = Self.read(body, chunk: 16 * 1024)
        #expect(Self.failure(result) == .tooManyParts(limit: 16))
        #expect(consumed <= 16 * 1024)
    }

    @Test("Text fields: one over 1 KiB, or all together over 8 KiB, are refused")
    func fieldSizes() {
        let long = Self.body(fields: [("callback_url", String(repeating: "x", count: 1025))], file: [1, 2, 3])
        #expect(Self.failure(Self.read(long, chunk: 100).0) == .fieldTooLong(name: "callback_url", limit: 1024))
        let many = Self.body(fields: (0..<9).map { ("f\($0)", String(repeating: "x", count: 1000)) }, file: [1, 2, 3])
        #expect(Self.failure(Self.read(many, chunk: 100).0) == .fieldsTooLarge(limit: 8 * 1024))
        let unnamed = Array("--\(Self.boundary)\r\nContent-Type: text/plain\r\n\r\n".utf8) + [UInt8](repeating: 7, count: 9000)
        #expect(Self.failure(Self.read(unnamed, chunk: 100).0) == .fieldsTooLarge(limit: 8 * 1024))
    }

    @Test("A second 'file' part is refused, not appended to the first")
    func secondFile() {
        var body = Self.body(file: [1, 2, 3], close: false)
        body += Array(
            "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.mov\"\r\n\r\n456\r\n--\(Self.boundary)--\r\n".utf8)
        let (result, file, _) = Self.read(body, chunk: 64)
        #expect(Self.failure(result) == .secondFile)
        #expect(file == [1, 2, 3])
    }

    @Test(
        "A 'music' part goes to its own file at every chunk size, whichever comes first; a second one, or one over its limit, is refused",
        arguments: [1, 5, 64, 4096])
    func musicPart(chunk: Int) throws {
        var random = SystemRandomNumberGenerator()
        let video = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let track = (0..<3000).map { _ in UInt8.random(in: 0x80...0xFF, using: &random) }
        func music(_ bytes: [UInt8]) -> [UInt8] {
            Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"music\"; filename=\"song.mp3\"\r\n\r\n".utf8) + bytes
                + Array("\r\n".utf8)
        }
        for musicFirst in [false, true] {
            var body = Self.body(fields: [("music_volume", "-3")], file: video, close: false)
            if musicFirst {
                body = Array("x\r\n".utf8) + music(track) + body.dropFirst(Array("preamble a proxy may add\r\n".utf8).count)
            } else {
                body += music(track)
            }
            body += Array("--\(Self.boundary)--\r\n".utf8)
            var file: [UInt8] = [], song: [UInt8] = []
            var reader = FormReader(boundary: Self.boundary, writeFile: { file.append(contentsOf: $0) }, writeMusic: { song.append(contentsOf: $0) })
            for start in stride(from: 0, to: body.count, by: chunk) {
                try reader.consume(ByteBuffer(bytes: body[start..<min(body.count, start + chunk)]))
            }
            let form = try reader.finish()
            #expect(file == video && song == track && form.musicFilename == "song.mp3" && form.musicBytes == Int64(track.count))
            #expect(form.fields == ["music_volume": "-3"], "the music part is no text field")
        }
        let twice = Self.body(file: [1, 2, 3], close: false) + music([4]) + music([5]) + Array("--\(Self.boundary)--\r\n".utf8)
        #expect(Self.failure(Self.read(twice, chunk: chunk).0) == .secondMusic)
        var limits = FormLimits()
        limits.musicBytes = 1000
        let large = Self.body(file: [1, 2, 3], close: false) + music(track) + Array("--\(Self.boundary)--\r\n".utf8)
        #expect(Self.failure(Self.read(large, chunk: chunk, limits: limits).0) == .musicTooLarge(limit: 1000))
    }

    @Test("A body that stops inside the file, or after a complete field, is incomplete")
    func truncated() {
        let cut = Self.body(fields: [("quality", "low")], file: [UInt8](repeating: 9, count: 5000), close: false)
        #expect(Self.failure(Self.read(Array(cut.dropLast(2000)), chunk: 512).0) == .truncated)
        #expect(Self.failure(Self.read(Self.body(fields: [("quality", "low")], file: nil, close: false), chunk: 512).0) == .truncated)
        #expect(Self.failure(Self.read([], chunk: 512).0) == .truncated)
    }

    @Test("Garbage: no boundary, a bad header line, junk after a boundary, an endless epilogue")
    func garbage() {
        let noBoundary = [UInt8](repeating: 0x41, count: 1 << 20)
        let (result, _, consumed) = Self.read(noBoundary, chunk: 4096)
        #expect(Self.failure(result) == .malformed("no boundary in its first 16 KiB"))
        #expect(consumed <= 24 * 1024)
        let badHeader = Array("--\(Self.boundary)\r\nno colon here\r\n\r\nx\r\n--\(Self.boundary)--".utf8)
        #expect(Self.failure(Self.read(badHeader, chunk: 8).0) == .malformed("a part's header line is not 'Name: value'"))
        let junk = Array("--\(Self.boundary)junk\r\n".utf8)
        #expect(Self.failure(Self.read(junk, chunk: 8).0) == .malformed("a boundary is followed by neither CRLF nor --"))
        let epilogue = Self.body(file: [1]) + [UInt8](repeating: 0, count: 100_000)
        #expect(Self.failure(Self.read(epilogue, chunk: 4096).0) == .malformed("more than 16 KiB follow the closing boundary"))
    }

    @Test("A part with no headers at all, and a closing boundary with no CRLF after it, are read")
    func lenient() throws {
        let body = Array(
            "--\(Self.boundary)\r\n\r\nignored\r\n--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nAB\r\n--\(Self.boundary)--"
                .utf8)
        var file: [UInt8] = []
        var reader = FormReader(boundary: Self.boundary) { file.append(contentsOf: $0) }
        try reader.consume(ByteBuffer(bytes: body))
        let form = try reader.finish()
        #expect(form.filename == "upload.mp4" && file == Array("AB".utf8) && form.fields.isEmpty)
    }
}
