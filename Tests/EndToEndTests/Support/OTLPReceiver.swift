import Foundation
import HTTPTypes
import Hummingbird
import MomentsSupport

/// A stand-in OpenTelemetry collector: an HTTP server that takes OTLP/HTTP trace exports
/// (`POST /v1/traces`, protobuf, as swift-otel sends them by default) and decodes their spans.
/// It also takes webhooks (`POST /hook`) so that a test can see the headers they carry.
actor OTLPReceiver {
    let port = Int.random(in: 12_000..<14_000)
    private(set) var spans: [ExportedSpan] = []
    private(set) var hooks: [[String: String]] = []
    private var server: Task<Void, any Error>?

    var endpoint: String { "http://127.0.0.1:\(port)" }

    func start() {
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            let spans = try OTLPTraceDecoder.spans(in: Array(body.readableBytesView))
            await self.received(spans)
            // An empty ExportTraceServiceResponse: every span accepted.
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
        }
        router.post("hook") { request, _ -> HTTPResponse.Status in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            await self.receivedHook(headers)
            return .ok
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        server = Task { try await app.run() }
    }

    func stop() { server?.cancel() }

    private func received(_ spans: [ExportedSpan]) { self.spans += spans }

    private func receivedHook(_ headers: [String: String]) { hooks.append(headers) }
}

/// One span of an export, with the `service.name` of the resource it came from.
struct ExportedSpan: Sendable, CustomStringConvertible {
    var service: String
    var traceID: String
    var spanID: String
    var parentSpanID: String
    var name: String
    var kind: Int
    var attributes: [String: String]
    var statusCode: Int

    var description: String { "\(service): \(name) [\(spanID) ← \(parentSpanID.isEmpty ? "root" : parentSpanID)]" }
}

/// Reads the protobuf of an `ExportTraceServiceRequest` (opentelemetry-proto's trace/v1 and
/// collector/trace/v1) for the fields a test looks at; every other field is skipped by its wire
/// type, as any protobuf reader does with fields it does not know.
enum OTLPTraceDecoder {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func spans(in bytes: [UInt8]) throws -> [ExportedSpan] {
        var spans: [ExportedSpan] = []
        for (field, value) in try fields(bytes[...]) where field == 1 {  // resource_spans
            guard case .bytes(let resourceSpans) = value else { continue }
            var service = ""
            var scopes: [ArraySlice<UInt8>] = []
            for (field, value) in try fields(resourceSpans) {
                guard case .bytes(let inner) = value else { continue }
                if field == 1 {  // resource
                    service = try attributes(of: inner, field: 1)["service.name"] ?? ""
                } else if field == 2 {  // scope_spans
                    scopes.append(inner)
                }
            }
            for scope in scopes {
                for (field, value) in try fields(scope) where field == 2 {  // spans
                    guard case .bytes(let span) = value else { continue }
                    spans.append(try decodeSpan(span, service: service))
                }
            }
        }
        return spans
    }

    private static func decodeSpan(_ bytes: ArraySlice<UInt8>, service: String) throws -> ExportedSpan {
        var span = ExportedSpan(
            service: service, traceID: "", spanID: "", parentSpanID: "", name: "", kind: 0, attributes: [:],
            statusCode: 0)
        for (field, value) in try fields(bytes) {
            switch (field, value) {
            case (1, .bytes(let id)): span.traceID = hex(id)
            case (2, .bytes(let id)): span.spanID = hex(id)
            case (4, .bytes(let id)): span.parentSpanID = hex(id)
            case (5, .bytes(let name)): span.name = String(decoding: name, as: UTF8.self)
            case (6, .varint(let kind)): span.kind = Int(kind)
            case (15, .bytes(let status)):  // Status { message = 2; code = 3 }
                for (field, value) in try fields(status) {
                    if field == 3, case .varint(let code) = value { span.statusCode = Int(code) }
                }
            default: break
            }
        }
        span.attributes = try attributes(of: bytes, field: 9)
        return span
    }

    /// The `KeyValue` list in field `field` of a message, with string, bool and int values as text.
    private static func attributes(of message: ArraySlice<UInt8>, field wanted: Int) throws -> [String: String] {
        var attributes: [String: String] = [:]
        for (field, value) in try fields(message) where field == wanted {
            guard case .bytes(let keyValue) = value else { continue }
            var key = ""
            var text = ""
            for (field, value) in try fields(keyValue) {
                if field == 1, case .bytes(let name) = value { key = String(decoding: name, as: UTF8.self) }
                if field == 2, case .bytes(let anyValue) = value {  // AnyValue: string 1, bool 2, int 3, double 4
                    for (kind, value) in try fields(anyValue) {
                        switch (kind, value) {
                        case (1, .bytes(let string)): text = String(decoding: string, as: UTF8.self)
                        case (2, .varint(let flag)): text = flag == 0 ? "false" : "true"
                        case (3, .varint(let number)): text = String(Int64(bitPattern: number))
                        case (4, .fixed64(let bits)): text = String(Double(bitPattern: bits))
                        default: break
                        }
                    }
                }
            }
            attributes[key] = text
        }
        return attributes
    }

    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    /// The fields of one message, in order.
    static func fields(_ bytes: ArraySlice<UInt8>) throws -> [(Int, Value)] {
        var fields: [(Int, Value)] = []
        var index = bytes.startIndex
        func varint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.endIndex, shift < 64 else { throw Malformed(description: "a varint runs past the end") }
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
        }
        func fixed(_ count: Int) throws -> UInt64 {
            guard bytes.endIndex - index >= count else { throw Malformed(description: "a fixed-width field runs past the end") }
            var result: UInt64 = 0
            for offset in 0..<count { result |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
            index += count
            return result
        }
        while index < bytes.endIndex {
            let tag = try varint()
            let field = Int(tag >> 3)
            switch tag & 7 {
            case 0: fields.append((field, .varint(try varint())))
            case 1: fields.append((field, .fixed64(try fixed(8))))
            case 2:
                let length = Int(try varint())
                guard length >= 0, bytes.endIndex - index >= length else { throw Malformed(description: "field \(field) runs past the end") }
                fields.append((field, .bytes(bytes[index..<index + length])))
                index += length
            case 5: fields.append((field, .fixed32(UInt32(try fixed(4)))))
            default: throw Malformed(description: "wire type \(tag & 7) of field \(field) is not one protobuf has")
            }
        }
        return fields
    }

    static func hex(_ bytes: ArraySlice<UInt8>) -> String { Hex.lowercase(bytes) }
}
