import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import MomentsContract
import MomentsModel
import Storage
import Synchronization

/// The one error shape clients see: `{"error": {"code": "...", "message": "..."}}` with an HTTP
/// status. Internals (SQL, Redis, curl, paths) never reach it; they are logged.
public struct APIError: HTTPResponseError, Equatable {
    public var status: HTTPResponse.Status
    public var code: APIErrorCode
    public var message: String
    /// Extra headers (`Retry-After`, `WWW-Authenticate`).
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: APIErrorCode, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let (fields, body) = try parts(requestID: request.headers[RequestIdentifier.header])
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: body))
    }

    /// The response's own headers and its JSON body, which names the request's id.
    func parts(requestID: String?) throws -> (HTTPFields, ByteBuffer) {
        let body = try MomentsJSON.encoder.encode(ErrorReply(code: code.rawValue, message: message, requestID: requestID))
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return (fields, ByteBuffer(bytes: body))
    }

    static func jobNotFound() -> APIError {
        APIError(.notFound, .jobNotFound, "There is no job with this id.")
    }

    /// Storage failed part-way through erasing a job or a device: the files are no longer served,
    /// and asking again finishes it.
    static func erasureCutShort(_ error: StorageError) -> APIError {
        APIError(
            .serviceUnavailable, .serviceUnavailable,
            "The files could not all be deleted just now (storage: \(error.message)). They are no longer served; ask again to finish.",
            headers: [.retryAfter: "5"])
    }

    static let serviceUnavailable = APIError(
        .serviceUnavailable, .serviceUnavailable,
        "The service is busy or a part of it is down. Please try again in a minute.")
}

/// The methods each route answers, known once every route is added: a known address asked with
/// another method gets 405 and `Allow`, not 404.
final class RouteTable: Sendable {
    private let routes = Mutex<[(path: RouterPath, method: HTTPRequest.Method)]>([])

    func record(_ descriptions: [Router<MomentsRequestContext>.RouteDescription]) {
        routes.withLock { $0 = descriptions.map { ($0.path, $0.method) } }
    }

    /// The methods routes at `path` answer (empty: no route has this address).
    func methods(at path: String) -> [HTTPRequest.Method] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        return routes.withLock { routes in
            routes.filter { route in
                route.path.components.count == parts.count && zip(route.path.components, parts).allSatisfy { $0 ~= $1 }
            }.map(\.method)
        }
    }
}

/// Maps every error to an `APIError`, in this one place, and logs what the client does not see.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    var routes = RouteTable()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as any HTTPResponseError {
            let allowed = error.status == .notFound ? Set(routes.methods(at: request.uri.path).map(\.rawValue)).sorted() : []
            if !allowed.isEmpty {
                throw APIError(
                    .methodNotAllowed, .methodNotAllowed, "This address answers \(allowed.joined(separator: ", ")) only.",
                    headers: [.allow: allowed.joined(separator: ", ")])
            }
            // Hummingbird's own (404 for an unknown route, 405 …): same shape, its status.
            let code: APIErrorCode = error.status == .notFound ? .notFound : .http(error.status)
            let message = error.status == .notFound ? "There is nothing at this address." : error.status.reasonPhrase
            throw APIError(error.status, code, message)
        } catch let error as any CodedError {
            context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw Self.map(error)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            throw APIError(.internalServerError, .internalError, "Something went wrong on our side. Please try again.")
        }
    }

    static func map(_ error: any CodedError) -> APIError {
        switch error {
        case let error as StorageError where error.code == .notFound:
            return APIError(.notFound, .notFound, "The file is no longer stored.")
        case is StorageError, is JobStoreError:
            return APIError.serviceUnavailable
        case let error where error.codeName == "unavailable":
            return APIError.serviceUnavailable  // the queue or another shared store is away
        default:
            return APIError(.internalServerError, .internalError, "Something went wrong on our side. Please try again.")
        }
    }
}
