import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// A request's id, `X-Request-Id`: the client's when it is well-formed (so an app's log and the
/// server's meet on it), else one made here. Every answer carries it, an error's body says it
/// (`error.request_id`), and every log line of the request carries it (as `hb.request.id`) and its
/// span (as `http.request.header.x_request_id`).
enum RequestIdentifier {
    static let header = HTTPField.Name("X-Request-Id")!
    /// The longest id taken from a client.
    static let longest = 128

    /// The client's id, if it is 1–128 characters of letters, digits and `-_.:+/=` (a UUID, a
    /// ULID, base64): anything else (spaces, quotes, control characters, a second value) could
    /// forge or break a log line, and is replaced.
    static func sent(in fields: HTTPFields) -> String? {
        let values = fields[values: header]
        guard values.count == 1, let value = values.first, (1...longest).contains(value.utf8.count),
            value.utf8.allSatisfy(isAllowed)
        else { return nil }
        return value
    }

    /// A new id, 32 hex digits: the process's random half, then a counter that starts at random
    /// (Hummingbird's scheme, padded): unique within the process, and no system call per request,
    /// which the status poll's fast path would feel.
    static func make() -> String { high + hex(next.wrappingAdd(1, ordering: .relaxed).oldValue) }

    private static let high = hex(UInt64.random(in: .min ... .max))
    private static let next = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "/"),
            UInt8(ascii: "="):
            true
        default: false
        }
    }
}

/// Outermost: settles the request's id (the client's, or a new one in place of the one Hummingbird
/// gave its logger), puts it in the logger and the request's headers (where the span records it),
/// and on the answer.
struct RequestIdentifierMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: MomentsRequestContext, next: (Request, MomentsRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let id = RequestIdentifier.sent(in: request.headers) ?? RequestIdentifier.make()
        context.logger[metadataKey: "hb.request.id"] = .string(id)
        var request = request
        if request.headers[RequestIdentifier.header] != id {
            var head = request.head
            head.headerFields[values: RequestIdentifier.header] = [id]
            request = Request(head: head, body: request.body)
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // Made into its answer here, not by the server, so that the answer carries the id too.
            response = try error.response(from: request, context: context)
        }
        response.headers[RequestIdentifier.header] = id
        return response
    }
}
