import Foundation
import Media
import MomentsModel
import ServiceTestSupport
import Storage
import Testing

@testable import API

/// A direct upload is probed where it lies, by ranged reads: the same answer as probing the file,
/// and never more than the read budget, whatever the file asks for.
@Suite("Probing a stored object by ranges")
struct StoredObjectInputTests {
    static func withStore(_ body: (LocalObjectStore, Int64) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-ranges-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try LocalObjectStore(root: folder)
        let info = try await store.put(key: "sources/clip.mp4", from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
        try await body(store, info.size)
    }

    @Test("The probe by ranges reads what the file probe reads (the footage keeps its index at the end, so the demuxer seeks)")
    func sameAnswer() async throws {
        try await Self.withStore { store, size in
            let input = StoredObjectInput(storage: store, key: "sources/clip.mp4", size: size, blockSize: 16 * 1024)
            let ranged = try await UploadController.probe { () throws(MomentsError) in try MediaProbe.probe(input, name: "clip.mp4") }
            let file = try MediaProbe.probe(TestFootage.twentySeconds)
            #expect(ranged.container == file.container && ranged.duration == file.duration && ranged.fileSize == size)
            #expect(ranged.width == file.width && ranged.height == file.height && ranged.frameRate == file.frameRate)
            #expect(input.fetched <= size && input.failure == nil)
        }
    }

    @Test("Past the read budget the probe stops with a refusal, and the failure says why")
    func budget() async throws {
        try await Self.withStore { store, size in
            let input = StoredObjectInput(storage: store, key: "sources/clip.mp4", size: size, blockSize: 4096, budget: 8192)
            await #expect(throws: (any Error).self) {
                try await UploadController.probe { () throws(MomentsError) in try MediaProbe.probe(input, name: "clip.mp4") }
            }
            #expect(input.fetched <= 8192 && input.failure?.code == .tooLarge, "\(String(describing: input.failure))")
        }
    }

    @Test("A missing object fails the read with storage's own error (the API answers 503 or 404 from it, not 415)")
    func storageFailure() async throws {
        try await Self.withStore { store, _ in
            let input = StoredObjectInput(storage: store, key: "sources/gone.mp4", size: 1000)
            let error = await #expect(throws: APIError.self) {
                try await UploadController.probe { () throws(MomentsError) in try MediaProbe.probe(input, name: "gone.mp4") }
            }
            #expect(error?.code == .ioError)
            #expect(input.failure?.code == .notFound)
        }
    }
}
