import Crypto
import Foundation
import MomentsSupport

/// Credentials for AWS Signature Version 4. `description` never shows the secret.
public struct SigV4Credentials: Sendable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "SigV4Credentials(\(accessKeyID), secret: ***\(sessionToken == nil ? "" : ", token: ***"))" }
}

/// An HTTP request as SigV4 sees it: method, path, query, headers and the hash of the body.
public struct SigV4Request: Sendable {
    public var method: String
    /// The path as the client means it (not percent-encoded): `/bucket/my photo.mov`.
    public var path: String
    /// Query parameters, not percent-encoded, in any order.
    public var query: [(name: String, value: String)]
    /// Headers as sent; the `Host` header is required.
    public var headers: [(name: String, value: String)]
    /// Lower-case hex SHA-256 of the body, or `UNSIGNED-PAYLOAD` (S3 presigned URLs, streamed uploads).
    public var payloadHash: String

    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)], payloadHash: String = SigV4Signer.emptyPayloadHash
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.payloadHash = payloadHash
    }
}

/// AWS Signature Version 4: signs requests with an `Authorization` header or as presigned URLs.
///
/// S3 and S3-compatible stores (R2, SeaweedFS, MinIO) sign the path as given (`normalizePath: false`);
/// other AWS services first remove `.`/`..` segments and repeated slashes.
public struct SigV4Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public var credentials: SigV4Credentials
    public var region: String
    public var service: String
    public var normalizePath: Bool
    /// Add the session token after signing instead of signing it (some STS-style services want that).
    public var omitSessionTokenFromSignature: Bool

    public init(
        credentials: SigV4Credentials, region: String, service: String = "s3",
        normalizePath: Bool = false, omitSessionTokenFromSignature: Bool = false
    ) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.normalizePath = normalizePath
        self.omitSessionTokenFromSignature = omitSessionTokenFromSignature
    }

    /// The pieces of one signature, for tests and for explaining a 403.
    public struct Signature: Sendable {
        public var canonicalRequest: String
        public var stringToSign: String
        public var signature: String
        public var signedHeaders: String
        /// Headers (header signing) or query parameters (presigning) to add to the request.
        public var additions: [(name: String, value: String)]
    }

    // MARK: Header signing

    /// Signs with an `Authorization` header. `additions` are the headers to send besides the request's
    /// own: `X-Amz-Date`, the session token if any, and `Authorization`.
    public func signHeaders(_ request: SigV4Request, date: Date, includeContentHashHeader: Bool = false) -> Signature {
        let (longDate, shortDate) = Self.timestamps(date)
        var headers = request.headers
        var additions: [(name: String, value: String)] = [("X-Amz-Date", longDate)]
        headers.append(("X-Amz-Date", longDate))
        if includeContentHashHeader {
            headers.append(("X-Amz-Content-Sha256", request.payloadHash))
            additions.append(("X-Amz-Content-Sha256", request.payloadHash))
        }
        if let token = credentials.sessionToken, !omitSessionTokenFromSignature {
            headers.append(("X-Amz-Security-Token", token))
            additions.append(("X-Amz-Security-Token", token))
        }
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(headers)
        let canonical = [
            request.method, canonicalPath(request.path), Self.canonicalQuery(request.query),
            canonicalHeaders, signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        let scope = self.scope(shortDate)
        let (toSign, signature) = sign(canonical, longDate: longDate, shortDate: shortDate)
        if let token = credentials.sessionToken, omitSessionTokenFromSignature { additions.append(("X-Amz-Security-Token", token)) }
        additions.append(
            (
                "Authorization",
                "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
            ))
        return Signature(
            canonicalRequest: canonical, stringToSign: toSign, signature: signature,
            signedHeaders: signedHeaders, additions: additions)
    }

    // MARK: Presigning

    /// Signs as a presigned URL valid for `expires` seconds. `additions` are the query parameters to
    /// append (unencoded), ending with `X-Amz-Signature`.
    public func presign(_ request: SigV4Request, date: Date, expires: Int) -> Signature {
        let (longDate, shortDate) = Self.timestamps(date)
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(request.headers)
        var parameters: [(name: String, value: String)] = [
            ("X-Amz-Algorithm", Self.algorithm),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(shortDate))"),
            ("X-Amz-Date", longDate),
            ("X-Amz-Expires", String(expires)),
        ]
        if let token = credentials.sessionToken, !omitSessionTokenFromSignature { parameters.append(("X-Amz-Security-Token", token)) }
        parameters.append(("X-Amz-SignedHeaders", signedHeaders))
        let canonical = [
            request.method, canonicalPath(request.path), Self.canonicalQuery(request.query + parameters),
            canonicalHeaders, signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        let (toSign, signature) = sign(canonical, longDate: longDate, shortDate: shortDate)
        if let token = credentials.sessionToken, omitSessionTokenFromSignature { parameters.append(("X-Amz-Security-Token", token)) }
        parameters.append(("X-Amz-Signature", signature))
        return Signature(
            canonicalRequest: canonical, stringToSign: toSign, signature: signature,
            signedHeaders: signedHeaders, additions: parameters)
    }

    // MARK: Canonical forms

    func canonicalPath(_ path: String) -> String {
        var path = path.isEmpty ? "/" : path
        if normalizePath { path = Self.removeDotSegments(path) }
        return Self.encode(path, keepSlash: true)
    }

    /// RFC 3986 section 5.2.4, plus collapsing repeated slashes (what AWS services other than S3 do).
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        for segment in segments {
            switch segment {
            case ".": continue
            case "..": if !output.isEmpty { output.removeLast() }
            default: output.append(segment)
            }
        }
        let trailing = path.hasSuffix("/") || path.hasSuffix("/.") || path.hasSuffix("/..")
        let joined = "/" + output.joined(separator: "/")
        return trailing && joined != "/" ? joined + "/" : joined
    }

    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (encode($0.name, keepSlash: false), encode($0.value, keepSlash: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Lower-case names, values trimmed with inner runs of spaces collapsed, repeated names joined
    /// with commas in order; sorted by name. Returns the block and the signed-headers list.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (String, String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            let collapsed = value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
            merged[name.lowercased(), default: []].append(collapsed)
        }
        let names = merged.keys.sorted()
        let block = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        return (block, names.joined(separator: ";"))
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (and `/` when asked), in UTF-8.
    public static func encode(_ string: String, keepSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.append("/")
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    // MARK: Keys

    private func scope(_ shortDate: String) -> String { "\(shortDate)/\(region)/\(service)/aws4_request" }

    /// The string to sign for `canonicalRequest`, and its signature with this day's derived key.
    private func sign(_ canonicalRequest: String, longDate: String, shortDate: String) -> (stringToSign: String, signature: String) {
        let stringToSign = [Self.algorithm, longDate, scope(shortDate), Hex.lowercase(SHA256.hash(data: Data(canonicalRequest.utf8)))]
            .joined(separator: "\n")
        func hmac(_ key: SymmetricKey, _ text: String) -> SymmetricKey {
            SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key))
        }
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [shortDate, region, service, "aws4_request"] { key = hmac(key, part) }
        let code = HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key)
        return (stringToSign, Hex.lowercase(code))
    }

    /// `20150830T123600Z` and `20150830`, in UTC.
    static func timestamps(_ date: Date) -> (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", c.year!, c.month!, c.day!)
        return (day + String(format: "T%02d%02d%02dZ", c.hour!, c.minute!, c.second!), day)
    }
}
