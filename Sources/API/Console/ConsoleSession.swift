import Crypto
import Foundation
import MomentsModel
import MomentsSupport

/// A signed-in operator. The session lives in a cookie signed with a key derived from
/// `ADMIN_TOKEN`, so every API node checks it without shared state, and changing the token signs
/// everyone out. Each session has its own CSRF token, derived from the same key and the session's
/// nonce, which every form that changes something must send back.
struct ConsoleSession: Sendable, Equatable {
    /// The name the operator gave at sign-in: it goes into the audit log as `console:<name>`.
    var name: String
    var expires: Date
    var nonce: String
    var csrf: String

    var actor: String { "console:\(name)" }
}

/// Signs and checks console sessions.
struct ConsoleKeys: Sendable {
    static let cookieName = "moments_console"
    let token: String
    let lifetime: Duration
    /// The HMAC key's bytes (SymmetricKey itself is not Sendable).
    private let keyBytes: [UInt8]

    init(token: String, lifetime: Duration) {
        self.token = token
        self.lifetime = lifetime
        keyBytes = Array(SHA256.hash(data: Data("moments-console-session-v1:\(token)".utf8)))
    }

    /// The cookie value that carries a new session for `name`.
    func newSession(name: String, now: Date = Date()) -> String {
        let nonce = Hex.random(bytes: 16)
        let expires = Int64(now.timeIntervalSince1970 + lifetime.inSeconds)
        let payload = "v1.\(expires).\(nonce).\(Base64URL.encode(name.utf8))"
        return payload + "." + mac(payload)
    }

    /// The session a cookie carries, if its signature holds and it has not expired.
    func session(cookie: String, now: Date = Date()) -> ConsoleSession? {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[0] == "v1", let expires = Int64(parts[1]), parts[2].count == 32 else { return nil }
        let payload = parts[0..<4].joined(separator: ".")
        guard MetricsController.equalInConstantTime(mac(payload), parts[4]) else { return nil }
        guard Double(expires) > now.timeIntervalSince1970, let nameData = Base64URL.decode(parts[3]) else { return nil }
        return ConsoleSession(
            name: String(decoding: nameData, as: UTF8.self), expires: Date(timeIntervalSince1970: Double(expires)),
            nonce: parts[2], csrf: csrf(parts[2]))
    }

    /// Whether `sent` is the admin token (compared without an early exit).
    func isToken(_ sent: String) -> Bool { MetricsController.equalInConstantTime(sent, token) }

    private func csrf(_ nonce: String) -> String { mac("csrf.\(nonce)") }

    private func mac(_ text: String) -> String {
        Hex.lowercase(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: keyBytes)))
    }
}
