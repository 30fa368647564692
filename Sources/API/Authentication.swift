import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JobStore

/// Device tokens: `mdt_` and 43 characters of base64url (256 random bits). The database keeps only
/// the SHA-256, so a leaked table does not leak tokens.
enum DeviceToken {
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return "mdt_" + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func sha256(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
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
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw APIError(.unauthorized, "invalid_token", "Send the device token as 'Authorization: Bearer <token>'.",
                               headers: Self.challenge)
            }
            let hash = DeviceToken.sha256(parts[1].trimmingCharacters(in: .whitespaces))
            let device = try await store.device(tokenSHA256: hash)
            guard let device else {
                throw APIError(.unauthorized, "invalid_token",
                               "This device token is not known or was revoked. Register again with POST /api/v1/devices.",
                               headers: Self.challenge)
            }
            context.identity = .device(device)
        } else if required, !Self.open.contains("\(request.method.rawValue) \(request.uri.path)") {
            throw APIError(.unauthorized, "auth_required",
                           "Send a device token as 'Authorization: Bearer <token>'. Get one with POST /api/v1/devices.",
                           headers: Self.challenge)
        }
        return try await next(request, context)
    }
}
