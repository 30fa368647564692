import Foundation
import MomentsSupport
import Testing

@Suite("Hex and base64url")
struct TextEncodingsTests {
    @Test("hex gives two lower-case digits a byte, for every byte")
    func hexOfEveryByte() {
        let bytes = (0...255).map(UInt8.init)
        #expect(Hex.lowercase(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(Hex.lowercase([]) == "")
        #expect(Hex.random(bytes: 16).count == 32)
        #expect(Hex.random(bytes: 16) != Hex.random(bytes: 16))
    }

    @Test("base64url: RFC 4648's vectors, unpadded, and the two characters it changes")
    func base64urlVectors() {
        for (text, encoded) in [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ] {
            #expect(Base64URL.encode(text.utf8) == encoded)
            #expect(Base64URL.decode(encoded) == Data(text.utf8))
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("-_8") == Data([0xfb, 0xff]))
        #expect(Base64URL.decode("not base64url!") == nil)
    }

    @Test("base64url decodes what it encodes, random bytes of every length to 64", arguments: 0..<65)
    func base64urlRoundTrip(length: Int) {
        let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max) }
        let text = Base64URL.encode(bytes)
        #expect(!text.contains { "+/=".contains($0) })
        #expect(Base64URL.decode(text) == Data(bytes))
    }
}
