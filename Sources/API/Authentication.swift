import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import MomentsSupport

/// Device tokens: `mdt_` and 43 characters of base64url (256 random bits). The database keeps only
/// the SHA-256, so a leaked table does not leak tokens.
enum DeviceToken {
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return "mdt_" + Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The SHA-256 of `token` in lower-case hex, as `devices.token_sha256` keeps it.
    static func sha256(_ token: String) -> String {
        Hex.lowercase(SHA256.hash(data: Array(token.utf8)))
    }

    /// The SHA-256 of the request's bearer token; nil when it sends no `Authorization` header, 401
    /// `invalid_token` when the header is not `Bearer <token>`.
    static func hash(of request: Request) throws -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        if let token = canonicalToken(header) { return sha256(token) }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
            throw APIError(
                .unauthorized, .invalidToken, "Send the device token as 'Authorization: Bearer <token>'.",
                headers: AuthenticationMiddleware.challenge)
        }
        return sha256(parts[1].trimmingCharacters(in: .whitespaces))
    }

    /// The token of `Bearer <token>` written as apps write it (one space, no other blanks, ASCII),
    /// read without Foundation's string functions; nil for any other form, which `hash(of:)` then
    /// reads the general way.
    static func canonicalToken(_ header: String) -> String? {
        var header = header
        return header.withUTF8 { bytes -> String? in
            guard bytes.count > 7, bytes[6] == UInt8(ascii: " ") else { return nil }
            for (index, letter) in "bearer".utf8.enumerated() where bytes[index] | 0x20 != letter { return nil }
            let token = UnsafeBufferPointer(rebasing: bytes[7...])
            guard token.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
            return String(decoding: token, as: UTF8.self)
        }
    }

    static let unknown = APIError(
        .unauthorized, .invalidToken,
        "This device token is not known or was revoked. Register again with POST /api/v1/devices.",
        headers: AuthenticationMiddleware.challenge)
    static let missing = APIError(
        .unauthorized, .authRequired,
        "Send a device token as 'Authorization: Bearer <token>'. Get one with POST /api/v1/devices.",
        headers: AuthenticationMiddleware.challenge)
}

/// Reads `Authorization: Bearer <token>` and sets the request's identity. A token that is sent must
/// be valid (401 `invalid_token`); without one, `AUTH_REQUIRED` decides between 401 `auth_required`
/// and the anonymous owner. Registering a device and reading the formats need no token.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = MomentsRequestContext
    let store: JobStore
    let required: Bool
    static let open: Set<String> = ["POST /api/v1/devices", "GET /api/v1/upload/formats"]
    static let challenge: HTTPFields = [.wwwAuthenticate: #"Bearer realm="moments""#]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let hash = try DeviceToken.hash(of: request) {
            // Looked up apart from the guard: Swift 6.3's optimizer crashes on a typed-throws `try await` inside it.
            var device = try await store.device(tokenSHA256: hash)
            // A device that erased itself may repeat that erasure (to finish it), and nothing else.
            if device == nil, request.method == .delete, request.uri.path == DevicesController.erasePath {
                device = try await store.erasedDevice(tokenSHA256: hash)
            }
            guard let device else { throw DeviceToken.unknown }
            context.identity = .device(device)
        } else if required, !Self.open.contains("\(request.method.rawValue) \(request.uri.path)") {
            throw DeviceToken.missing
        }
        return try await next(request, context)
    }
}
