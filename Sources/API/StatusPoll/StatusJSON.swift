import Foundation
import HTTPTypes
import Hummingbird
import MomentsContract
import NIOCore

/// `/status`'s JSON, written straight into the response buffer: byte for byte what
/// `MomentsJSON.encoder` writes for a `JobStatusReport` (keys sorted, `null` for what is not set,
/// `poster_url` and `metadata` only when there are, whole-second UTC dates, slashes unescaped, numbers as
/// JSONEncoder prints them). The poll is most of the API's traffic, and `JSONEncoder` (with its
/// dates through a formatter) was a tenth of its CPU time. `StatusJSONTests` holds the two
/// encoders to the same bytes.
enum StatusJSON {
    static func response(_ report: JobStatusReport) -> Response {
        let (headers, buffer) = parts(report)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }

    /// The response's own headers, with room for the `Date` and `Server` added after, and its body.
    static func parts(_ report: JobStatusReport) -> (HTTPFields, ByteBuffer) {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(320)
        write(report, to: &buffer)
        var headers = HTTPFields()
        headers.reserveCapacity(4)
        headers.append(HTTPField(name: .contentType, value: "application/json; charset=utf-8"))
        headers.append(HTTPField(name: .contentLength, value: String(buffer.readableBytes)))
        return (headers, buffer)
    }

    static func write(_ report: JobStatusReport, to buffer: inout ByteBuffer) {
        buffer.writeStaticString("{\"completed_at\":")
        writeDate(report.completedAt, to: &buffer)
        buffer.writeStaticString(",\"created_at\":")
        writeDate(report.createdAt, to: &buffer)
        buffer.writeStaticString(",\"duration\":")
        writeNumber(report.duration, to: &buffer)
        buffer.writeStaticString(",\"job_id\":\"")
        writeUUID(report.jobID, to: &buffer)
        buffer.writeStaticString("\",\"message\":")
        writeString(report.message, to: &buffer)
        if let metadata = report.metadata {
            // Rare and small: the encoder's own bytes, so its key order is the same by construction.
            buffer.writeStaticString(",\"metadata\":")
            buffer.writeBytes((try? MomentsJSON.encoder.encode(metadata)) ?? Data("{}".utf8))
        }
        buffer.writeStaticString(",\"original_filename\":")
        writeString(report.originalFilename, to: &buffer)
        if let poster = report.posterURL {
            buffer.writeStaticString(",\"poster_url\":")
            writeString(poster, to: &buffer)
        }
        buffer.writeStaticString(",\"progress\":")
        buffer.writeString(String(report.progress))
        buffer.writeStaticString(",\"result_url\":")
        writeString(report.resultURL, to: &buffer)
        buffer.writeStaticString(",\"segments_selected\":")
        if let segments = report.segmentsSelected { buffer.writeString(String(segments)) } else { buffer.writeStaticString("null") }
        buffer.writeStaticString(",\"status\":\"")
        buffer.writeString(report.status.rawValue)
        buffer.writeStaticString("\"}")
    }

    /// A JSON string as JSONEncoder escapes it: `"` and `\`, the control characters (`\b \f \n \r \t`,
    /// the rest as `\u00xx`), nothing else.
    static func writeString(_ string: String?, to buffer: inout ByteBuffer) {
        guard let string else {
            buffer.writeStaticString("null")
            return
        }
        buffer.writeInteger(UInt8(ascii: "\""))
        var text = string
        text.withUTF8 { bytes in write(bytes, to: &buffer) }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, to buffer: inout ByteBuffer) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case 0x08: buffer.writeStaticString("\\b")
            case 0x0C: buffer.writeStaticString("\\f")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            case 0..<0x20:
                buffer.writeStaticString("\\u00")
                buffer.writeInteger(hexDigits[Int(byte >> 4)])
                buffer.writeInteger(hexDigits[Int(byte & 0x0F)])
            default:
                buffer.writeInteger(byte)
            }
        }
    }

    /// A number as JSONEncoder prints a Double: Swift's shortest form, without a trailing `.0`.
    static func writeNumber(_ value: Double?, to buffer: inout ByteBuffer) {
        guard let value, value.isFinite else {
            buffer.writeStaticString("null")
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        buffer.writeString(text)
    }

    /// `MomentsJSON.format(date)` in quotes: `2026-11-21T10:15:03Z`, whole seconds rounded down.
    static func writeDate(_ date: Date?, to buffer: inout ByteBuffer) {
        guard let date else {
            buffer.writeStaticString("null")
            return
        }
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (year, month, day) = civil(fromDays: days)
        let time = seconds - days * 86_400
        buffer.writeInteger(UInt8(ascii: "\""))
        if year < 0 || year > 9999 {
            // Outside what four digits hold: the formatter's own answer.
            buffer.writeString(MomentsJSON.format(date))
        } else {
            digits(Int(year), 4, &buffer)
            buffer.writeInteger(UInt8(ascii: "-"))
            digits(month, 2, &buffer)
            buffer.writeInteger(UInt8(ascii: "-"))
            digits(day, 2, &buffer)
            buffer.writeInteger(UInt8(ascii: "T"))
            digits(Int(time / 3600), 2, &buffer)
            buffer.writeInteger(UInt8(ascii: ":"))
            digits(Int(time / 60 % 60), 2, &buffer)
            buffer.writeInteger(UInt8(ascii: ":"))
            digits(Int(time % 60), 2, &buffer)
            buffer.writeInteger(UInt8(ascii: "Z"))
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shifted + 2) / 5 + 1)
        let month = Int(shifted < 10 ? shifted + 3 : shifted - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The UUID in lower case, as the contract writes ids.
    static func writeUUID(_ id: UUID, to buffer: inout ByteBuffer) {
        let bytes = id.uuid
        withUnsafeBytes(of: bytes) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { buffer.writeInteger(UInt8(ascii: "-")) }
                buffer.writeInteger(hexDigits[Int(byte >> 4)])
                buffer.writeInteger(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    private static func digits(_ value: Int, _ count: Int, _ buffer: inout ByteBuffer) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            buffer.writeInteger(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
