import Foundation
import MomentsModel
import MomentsSupport

/// Where the server may send requests that a user chose the address of (webhooks): http or https,
/// an allowed port, and a host whose every address is public. What a user names must not reach
/// the server's own neighbourhood: loopback, private networks, link-local (cloud metadata at
/// 169.254.169.254), carrier-grade NAT, unique-local IPv6, cluster services.
public struct DestinationPolicy: Sendable, Equatable {
    /// Allow private, loopback and link-local addresses (development and tests only).
    public var allowPrivate: Bool
    /// The ports a URL may name; nil allows any.
    public var ports: Set<Int>?

    public init(allowPrivate: Bool = false, ports: Set<Int>? = [80, 443]) {
        self.allowPrivate = allowPrivate
        self.ports = ports
    }

    /// `WEBHOOK_ALLOW_PRIVATE` (false) and `WEBHOOK_ALLOWED_PORTS` (`80,443`; `*` for any).
    public init(environment: Settings) throws(SettingError) {
        let allowPrivate = try Setting.boolean("WEBHOOK_ALLOW_PRIVATE", in: environment, default: false)
        let text = (environment["WEBHOOK_ALLOWED_PORTS"] ?? "80,443").trimmingCharacters(in: .whitespaces)
        if text == "*" {
            self.init(allowPrivate: allowPrivate, ports: nil)
            return
        }
        let ports = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !ports.isEmpty, ports.allSatisfy({ $0.map((1...65535).contains) ?? false }) else {
            throw SettingError("WEBHOOK_ALLOWED_PORTS must be port numbers separated by commas (like 80,443), or * for any; it is '\(text)'.")
        }
        self.init(allowPrivate: allowPrivate, ports: Set(ports.compactMap { $0 }))
    }

    /// What a webhook URL must look like before its host is looked at, as a clause for messages.
    public static let wellFormedRule = "an absolute http:// or https:// URL without credentials, at most 2,000 characters"

    /// Whether `text` is `wellFormedRule`'s URL (a callback, an operator's endpoint).
    public static func isWellFormed(_ text: String) -> Bool {
        guard text.count <= 2000, let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            return false
        }
        return url.host?.isEmpty == false && url.user == nil
    }
}

/// A URL that passed `DestinationPolicy`, with the address it was checked at: a request pins that
/// address (`CurlRequest.pinnedAddress`), so a second DNS answer cannot send it elsewhere.
public struct CheckedDestination: Sendable, Equatable {
    public let url: String
    public let host: String
    public let port: Int
    /// The numeric address the host resolved to when checked.
    public let address: String
}

/// Why a destination was refused, as a sentence's ending ("callback_url …").
public struct DestinationRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    /// True when asking again later may succeed (the name did not resolve).
    public let transient: Bool
    public var description: String { reason }
}

extension DestinationPolicy {
    /// Checks `text` and resolves its host (blocking: call it off the cooperative pool, as `check`
    /// does). Every address the host has must be public, not just the first.
    public func checkBlocking(_ text: String) throws(DestinationRefusal) -> CheckedDestination {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else {
            throw DestinationRefusal(reason: "must be an absolute http:// or https:// URL without credentials", transient: false)
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        if let ports, !ports.contains(port) {
            throw DestinationRefusal(
                reason: "may use port \(ports.sorted().map(String.init).joined(separator: " or ")) only, not \(port)",
                transient: false)
        }
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let addresses = try Self.resolve(name)
        // The address found is not told: the sentence goes to whoever sent the URL.
        if !allowPrivate, addresses.contains(where: { !$0.isPublic }) {
            throw DestinationRefusal(reason: "must name a host on the public internet; \(name) is not", transient: false)
        }
        return CheckedDestination(url: text, host: name, port: port, address: addresses[0].text)
    }

    /// `checkBlocking` on a thread that may block.
    public func check(_ text: String) async throws(DestinationRefusal) -> CheckedDestination {
        let result: Result<CheckedDestination, DestinationRefusal> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do throws(DestinationRefusal) { continuation.resume(returning: .success(try checkBlocking(text))) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    private static func resolve(_ host: String) throws(DestinationRefusal) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            throw DestinationRefusal(reason: "names a host that could not be found (\(host))", transient: status == EAI_AGAIN)
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = IPAddress(current.pointee.ai_addr), !addresses.contains(address) { addresses.append(address) }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw DestinationRefusal(reason: "names a host with no address (\(host))", transient: true) }
        return addresses
    }
}

/// An IPv4 or IPv6 address, classified.
public struct IPAddress: Sendable, Equatable {
    /// 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    init?(_ socketAddress: UnsafeMutablePointer<sockaddr>?) {
        guard let socketAddress else { return nil }
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
        case AF_INET6:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin6_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
        default:
            return nil
        }
    }

    /// The address as curl and people write it.
    public var text: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// False for every range that is not the public internet (RFC 6890 and friends).
    public var isPublic: Bool {
        if bytes.count == 4 { return Self.isPublicV4(bytes) }
        let b = bytes
        // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): judge the IPv4 inside.
        if b[0..<10].allSatisfy({ $0 == 0 }) && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0)) {
            return Self.isPublicV4(Array(b[12..<16]))
        }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return Self.isPublicV4(Array(b[12..<16]))
        }
        if b[0] & 0xfe == 0xfc { return false }  // fc00::/7 unique local
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xff { return false }  // ff00::/8 multicast
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8 { return false }  // 2001:db8::/32 documentation
        if b[0] == 0x01 && b[1..<8].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard
        return true
    }

    private static func isPublicV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1], b[2]) {
        case (0, _, _), (10, _, _), (127, _, _): return false  // this network, private, loopback
        case (100, 64...127, _): return false  // 100.64/10 carrier-grade NAT
        case (169, 254, _): return false  // link-local, cloud metadata
        case (172, 16...31, _): return false  // private
        case (192, 0, 0), (192, 0, 2): return false  // IETF protocol assignments, TEST-NET-1
        case (192, 88, 99): return false  // 6to4 relay anycast
        case (192, 168, _): return false  // private
        case (198, 18...19, _): return false  // benchmarking
        case (198, 51, 100), (203, 0, 113): return false  // TEST-NET-2, TEST-NET-3
        case (224...255, _, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }
}
