import Foundation

/// Lower-case hex: the text form of digests, authentication codes and random secrets.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lower-case hex digits a byte.
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            for (i, byte) in bytes.enumerated() {
                text[2 * i] = digits[Int(byte >> 4)]
                text[2 * i + 1] = digits[Int(byte & 0x0f)]
            }
            return bytes.count * 2
        }
    }

    /// `count` random bytes from the system's generator, in hex.
    public static func random(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return lowercase((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

/// Base64url without padding (RFC 4648 §5): tokens, JWTs and signed cookies.
public enum Base64URL {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Nil when `text` is not base64url.
    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
