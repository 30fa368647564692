import Foundation
import Testing

@testable import Storage

@Suite("Local object store")
final class LocalObjectStoreTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-store-\(UUID().uuidString)")

    deinit { try? FileManager.default.removeItem(at: folder) }

    func store() throws -> LocalObjectStore { try LocalObjectStore(root: folder.appendingPathComponent("root")) }

    func file(bytes count: Int, seed: UInt8) throws -> URL {
        let url = folder.appendingPathComponent("in-\(count)-\(seed)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }).write(to: url)
        return url
    }

    @Test("round trips byte for byte", arguments: [0, 1, 5 * 1024 * 1024 + 1])
    func roundTrip(size: Int) async throws {
        let store = try store()
        let input = try file(bytes: size, seed: 7)
        let key = "sources/2026/11/clip-\(size).mov"
        let stored = try await store.put(key: key, from: input, contentType: "video/quicktime")
        #expect(stored.size == Int64(size))
        #expect(try await store.head(key: key).size == Int64(size))
        let output = folder.appendingPathComponent("out-\(size)")
        try await store.get(key: key, to: output)
        #expect(try Data(contentsOf: output) == Data(contentsOf: input))
        try await store.delete(key: key)
        await #expect(throws: StorageError(.notFound, "There is no object \(key).")) { try await store.head(key: key) }
        try await store.delete(key: key)  // deleting what is gone succeeds
    }

    @Test(
        "keys can never leave the root",
        arguments: [
            "../escape", "/etc/passwd", "a/../../b", "a//b", "", ".", "a/./b", "a\\..\\b", "nul\u{0}byte", String(repeating: "k", count: 1025),
        ])
    func rejectsKeys(key: String) async throws {
        let store = try store()
        let input = try file(bytes: 10, seed: 1)
        await #expect(throws: StorageError.self) { try await store.put(key: key, from: input, contentType: "video/mp4") }
        let outside = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != "root" && !$0.hasPrefix("in-") }
        #expect(outside.isEmpty, "wrote \(outside) outside the root")
    }

    @Test("a symbolic link inside the root cannot lead out of it")
    func symlinkEscape() async throws {
        let store = try store()
        let outside = folder.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: store.root.appendingPathComponent("link"), withDestinationURL: outside)
        let input = try file(bytes: 10, seed: 2)
        await #expect(throws: StorageError.self) { try await store.put(key: "link/x.mp4", from: input, contentType: "video/mp4") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test("replacing is atomic and a failed write leaves nothing behind")
    func atomicReplace() async throws {
        let store = try store()
        let first = try file(bytes: 1000, seed: 3), second = try file(bytes: 2000, seed: 4)
        try await store.put(key: "results/h.mp4", from: first, contentType: "video/mp4")
        try await store.put(key: "results/h.mp4", from: second, contentType: "video/mp4")
        #expect(try await store.head(key: "results/h.mp4").size == 2000)
        await #expect(throws: StorageError.self) {
            try await store.put(key: "results/h.mp4", from: folder.appendingPathComponent("missing"), contentType: "video/mp4")
        }
        #expect(try await store.head(key: "results/h.mp4").size == 2000)
        let names = try FileManager.default.contentsOfDirectory(atPath: store.root.appendingPathComponent("results").path)
        #expect(names == ["h.mp4"], "left \(names)")
    }
}
