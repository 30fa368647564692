import Foundation
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import Storage

/// The S3 store against SeaweedFS (`scripts/services`), which checks every signature.
@Suite("S3 object store (real SeaweedFS)")
struct S3ObjectStoreTests {
    static func configuration(
        secret: String? = nil, addressing: S3Configuration.Addressing = .path,
        endpoint: String? = nil
    ) throws -> S3Configuration {
        var environment = Settings(ProcessInfo.processInfo.environment)
        if let secret { environment["S3_SECRET_ACCESS_KEY"] = secret }
        if let endpoint { environment["S3_ENDPOINT"] = endpoint }
        environment["S3_ADDRESSING"] = addressing.rawValue
        let url = try TestServices.environment("STORAGE_URL")
        var configuration = try StorageConfiguration.s3(bucket: URL(string: url)?.host ?? "", environment: environment)
        configuration.maxAttempts = 3
        return configuration
    }

    static func store(_ configuration: S3Configuration? = nil) throws -> S3ObjectStore {
        S3ObjectStore(configuration: try configuration ?? Self.configuration())
    }

    /// A folder of scratch files removed afterwards.
    static func withScratch(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-s3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    /// `size` bytes of a fixed pseudo-random sequence (so a mix-up of parts would show).
    static func makeFile(_ url: URL, size: Int) throws {
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(size)
        var remaining = size
        while remaining > 0 {
            let count = min(remaining, 1 << 20)
            var chunk = [UInt8](repeating: 0, count: count)
            for i in 0..<count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                chunk[i] = UInt8(truncatingIfNeeded: state >> 33)
            }
            try handle.write(contentsOf: chunk)
            remaining -= count
        }
    }

    static func key(_ name: String) -> String { "tests/\(UUID().uuidString.lowercased())/\(name)" }

    /// The store `addressing` names: path-style at the services' endpoint, or virtual-hosted at
    /// `bucket.localhost` (curl resolves *.localhost to the loopback address itself).
    static func store(_ addressing: S3Configuration.Addressing) throws -> S3ObjectStore {
        guard addressing == .virtualHosted else { return try store() }
        var components = URLComponents(url: try configuration().endpoint, resolvingAgainstBaseURL: false)!
        components.host = "localhost"
        return try store(configuration(addressing: .virtualHosted, endpoint: components.string))
    }

    /// What each round trip sends: path-style from nothing to four parts, and virtual-hosted.
    static let roundTrips: [(S3Configuration.Addressing, Int)] = [
        (.path, 0), (.path, 1), (.path, 5 * 1024 * 1024 + 1), (.path, 64 * 1024 * 1024), (.virtualHosted, 4096),
    ]

    @Test("Round trips compare byte for byte (the 64 MiB file goes up in equal parts), path-style and virtual-hosted", arguments: roundTrips)
    func roundTrip(addressing: S3Configuration.Addressing, size: Int) async throws {
        let store = try Self.store(addressing)
        try await Self.withScratch { folder in
            let original = folder.appendingPathComponent("original.bin")
            let copy = folder.appendingPathComponent("copy.bin")
            try Self.makeFile(original, size: size)
            let key = Self.key("video \(size).mp4")  // a space: the path must be encoded the same way it is signed
            let stored = try await store.put(key: key, from: original, contentType: "video/mp4")
            #expect(stored.size == Int64(size))
            let head = try await store.head(key: key)
            #expect(head.size == Int64(size) && head.contentType == "video/mp4")
            let fetched = try await store.get(key: key, to: copy)
            #expect(fetched.size == Int64(size))
            #expect(FileManager.default.contentsEqual(atPath: original.path, andPath: copy.path))
            if size >= store.configuration.multipartThreshold {
                // A multipart object's ETag ends in "-<parts>": 64 MiB in 16 MiB parts is 4.
                let headURL = try store.presignedURL(key: key, method: "HEAD", expires: .seconds(60))
                let reply = try curl(["-I", headURL.absoluteString])
                #expect(reply.body.lowercased().contains("-4\""), "\(reply.body)")
            }
            try await store.delete(key: key)
            let gone = await #expect(throws: StorageError.self) { try await store.head(key: key) }
            #expect(gone?.code == .notFound)
            try await store.delete(key: key)  // deleting what is not there succeeds
        }
    }

    @Test("A multipart upload that fails part-way is aborted: no unfinished upload and no object are left")
    func abortOnFailure() async throws {
        var configuration = try Self.configuration()
        configuration.multipartThreshold = 5 << 20
        configuration.partSize = 5 << 20
        configuration.maxAttempts = 1
        let store = S3ObjectStore(configuration: configuration)
        try await Self.withScratch { folder in
            let file = folder.appendingPathComponent("shrinking.bin")
            try Self.makeFile(file, size: 48 << 20)
            let key = Self.key("shrinking.bin")
            let upload = Task { try await store.put(key: key, from: file, contentType: "video/mp4") }
            try await Task.sleep(for: .milliseconds(100))
            #expect(truncate(file.path, 1 << 20) == 0, "the file shrinks while its parts go up")
            let error = await #expect(throws: StorageError.self) { try await upload.value }
            #expect(error?.code == .ioError)
            let unfinished = try await store.unfinishedUploads(prefix: key)
            #expect(unfinished.isEmpty, "\(unfinished)")
            let missing = await #expect(throws: StorageError.self) { try await store.head(key: key) }
            #expect(missing?.code == .notFound)
        }
    }

    @Test("Unfinished multipart uploads can be listed and aborted")
    func unfinishedUploads() async throws {
        let store = try Self.store()
        let key = Self.key("left-behind.bin")
        // Start an upload the way a crashed process would leave it: initiated, never completed.
        let created = try await store.startMultipartUpload(key: key, contentType: "video/mp4")
        #expect(try await store.unfinishedUploads(prefix: key).map(\.uploadID) == [created])
        try await store.abortUpload(key: key, uploadID: created)
        #expect(try await store.unfinishedUploads(prefix: key).isEmpty)
    }

    @Test("A missing object is not_found, and a failed download leaves no file behind")
    func missing() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let target = folder.appendingPathComponent("never.bin")
            let error = await #expect(throws: StorageError.self) { try await store.get(key: Self.key("nope.mp4"), to: target) }
            #expect(error?.code == .notFound)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(leftovers.isEmpty)
        }
    }

    @Test("Presigned GET and PUT URLs work with plain curl")
    func presigned() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let original = folder.appendingPathComponent("upload.bin")
            try Self.makeFile(original, size: 300_000)
            let key = Self.key("presigned.mp4")
            let put = try store.presignedURL(key: key, method: "PUT", expires: .seconds(300))
            #expect(try curl(["-X", "PUT", "--upload-file", original.path, put.absoluteString]).status == 200)
            #expect(try await store.head(key: key).size == 300_000)
            let downloaded = folder.appendingPathComponent("download.bin")
            let get = try store.presignedURL(key: key, expires: .seconds(300))
            #expect(try curl(["-o", downloaded.path, get.absoluteString]).status == 200)
            #expect(FileManager.default.contentsEqual(atPath: original.path, andPath: downloaded.path))
            try await store.delete(key: key)
        }
    }

    @Test("A PUT URL signed with a length takes exactly that many bytes: storage refuses a longer or shorter body")
    func presignedLength() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let exact = folder.appendingPathComponent("exact.bin"), longer = folder.appendingPathComponent("longer.bin")
            try Self.makeFile(exact, size: 300_000)
            try Self.makeFile(longer, size: 300_001)
            let key = Self.key("sized.mp4")
            let put = try store.presignedURL(key: key, method: "PUT", expires: .seconds(300), contentLength: 300_000)
            #expect(put.query?.contains("X-Amz-SignedHeaders=content-length%3Bhost") == true, "\(put)")
            #expect(try curl(["-X", "PUT", "--upload-file", longer.path, put.absoluteString]).status == 403)
            let short = try curl(["-X", "PUT", "-H", "Content-Length: 10", "--data-binary", "0123456789", put.absoluteString])
            #expect(short.status == 403)
            let missing = await #expect(throws: StorageError.self) { try await store.head(key: key) }
            #expect(missing?.code == .notFound, "neither wrong length was stored")
            #expect(try curl(["-X", "PUT", "--upload-file", exact.path, put.absoluteString]).status == 200)
            #expect(try await store.head(key: key).size == 300_000)
            try await store.delete(key: key)
        }
    }

    @Test("Ranged reads, server-side copies, and downloads capped at a length (a longer object fails too_large and leaves no file)")
    func rangesCopiesAndCaps() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let original = folder.appendingPathComponent("original.bin")
            try Self.makeFile(original, size: 1_000_000)
            let bytes = try [UInt8](Data(contentsOf: original))
            let key = Self.key("ranged.bin"), copied = Self.key("copied.bin")
            try await store.put(key: key, from: original, contentType: "application/octet-stream")
            #expect(try await store.read(key: key, offset: 0, length: 10) == Array(bytes[0..<10]))
            #expect(try await store.read(key: key, offset: 999_990, length: 100) == Array(bytes[999_990...]), "fewer at the end")
            #expect(try await store.read(key: key, offset: 500_000, length: 262_144) == Array(bytes[500_000..<762_144]))

            let info = try await store.copy(from: key, to: copied)
            #expect(info.size == 1_000_000 && info.key == copied)
            let copy = folder.appendingPathComponent("copy.bin")
            try await store.get(key: copied, to: copy, limit: 1_000_000)
            #expect(FileManager.default.contentsEqual(atPath: original.path, andPath: copy.path))
            let missing = await #expect(throws: StorageError.self) { try await store.copy(from: Self.key("nope.bin"), to: Self.key("x.bin")) }
            #expect(missing?.code == .notFound)

            let capped = folder.appendingPathComponent("capped.bin")
            let refused = await #expect(throws: StorageError.self) { try await store.get(key: copied, to: capped, limit: 999_999) }
            #expect(refused?.code == .tooLarge, "\(String(describing: refused))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["copy.bin", "original.bin"])
            try await store.delete(key: key)
            try await store.delete(key: copied)
        }
    }

    @Test("A listing's LastModified reads with milliseconds (AWS, R2) and without (SeaweedFS)")
    func listingTimestamps() {
        #expect(S3ObjectStore.timestamp("2026-11-23T10:00:00.250Z")?.timeIntervalSince1970 == 1_795_428_000.25)
        #expect(S3ObjectStore.timestamp("2026-11-23T10:00:00Z")?.timeIntervalSince1970 == 1_795_428_000)
        #expect(S3ObjectStore.timestamp("yesterday") == nil)
    }

    @Test("Listing by prefix pages through the keys in order, with sizes and times")
    func listing() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let file = folder.appendingPathComponent("x.bin")
            try Self.makeFile(file, size: 5)
            let prefix = "tests/\(UUID().uuidString.lowercased())/list/"
            let keys = (0..<7).map { "\(prefix)\($0) & <\($0)>.mp4" }  // characters S3 escapes in its XML
            let written = Date()
            for key in keys { try await store.put(key: key, from: file, contentType: "video/mp4") }
            var seen: [StoredObject] = []
            var after: String? = nil
            while true {
                let page = try await store.list(prefix: prefix, after: after, limit: 3)
                guard let last = page.last else { break }
                #expect(page.count <= 3)
                seen += page
                after = last.key
            }
            #expect(seen.map(\.key) == keys.sorted())
            // Between the first write and the listing (SeaweedFS gives whole seconds; one server, one clock),
            // however long a loaded machine took over it.
            let listed = Date()
            #expect(
                seen.allSatisfy {
                    $0.size == 5 && $0.lastModified >= written.addingTimeInterval(-2) && $0.lastModified <= listed.addingTimeInterval(2)
                },
                "\(seen.map(\.lastModified)) against \(written)…\(listed)")
            #expect(try await store.list(prefix: prefix + "none/", after: nil, limit: 10).isEmpty)
            for key in keys { try await store.delete(key: key) }
        }
    }

    @Test("S3_PUBLIC_ENDPOINT: presigned URLs name the address clients use, and storage verifies them there")
    func publicEndpoint() async throws {
        let direct = try Self.configuration()
        let port = try #require(direct.endpoint.port)
        var environment = Settings(ProcessInfo.processInfo.environment)
        environment["S3_PUBLIC_ENDPOINT"] = "http://localhost:\(port)"
        let bucket = URL(string: try TestServices.environment("STORAGE_URL"))?.host ?? ""
        let store = S3ObjectStore(configuration: try StorageConfiguration.s3(bucket: bucket, environment: environment))
        try await Self.withScratch { folder in
            let original = folder.appendingPathComponent("public.bin")
            try Self.makeFile(original, size: 1000)
            let key = Self.key("public.bin")
            try await store.put(key: key, from: original, contentType: "application/octet-stream")
            let url = try store.presignedURL(key: key, expires: .seconds(60))
            #expect(url.host == "localhost" && url.port == port, "\(url)")
            #expect(try curl(["-o", "/dev/null", url.absoluteString]).status == 200)
            try await store.delete(key: key)
        }
        environment["S3_PUBLIC_ENDPOINT"] = "localhost:8333"
        let error = #expect(throws: StorageError.self) { try StorageConfiguration.s3(bucket: bucket, environment: environment) }
        #expect(error?.message.contains("S3_PUBLIC_ENDPOINT") == true)
    }

    @Test("An expired presigned URL is refused")
    func expiredPresignedURL() async throws {
        let store = try Self.store()
        try await Self.withScratch { folder in
            let original = folder.appendingPathComponent("x.bin")
            try Self.makeFile(original, size: 10)
            let key = Self.key("expired.bin")
            try await store.put(key: key, from: original, contentType: "application/octet-stream")
            let url = try store.presignedURL(key: key, expires: .seconds(60), date: Date(timeIntervalSinceNow: -3600))
            let reply = try curl([url.absoluteString])
            #expect(reply.status == 403)
            #expect(reply.body.contains("AccessDenied") || reply.body.contains("expired"), "\(reply.body)")
            try await store.delete(key: key)
        }
    }

    @Test("A wrong secret is refused with a sentence that names the setting, and never shows the secret")
    func wrongSecret() async throws {
        let store = try Self.store(Self.configuration(secret: "definitely-not-the-secret"))
        try await Self.withScratch { folder in
            let file = folder.appendingPathComponent("x.bin")
            try Self.makeFile(file, size: 10)
            let error = await #expect(throws: StorageError.self) {
                try await store.put(key: Self.key("x.bin"), from: file, contentType: "application/octet-stream")
            }
            #expect(error?.code == .forbidden)
            #expect(error?.message.contains("S3_SECRET_ACCESS_KEY") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("definitely-not-the-secret") == false)
            #expect(!"\(store.configuration)".contains("definitely-not-the-secret"))
        }
    }

    @Test("An unreachable endpoint is retried with backoff, then reported as unavailable")
    func unreachable() async throws {
        var configuration = try Self.configuration(endpoint: "http://127.0.0.1:1")
        configuration.maxAttempts = 3
        let store = S3ObjectStore(configuration: configuration)
        let started = ContinuousClock.now
        let error = await #expect(throws: StorageError.self) { try await store.head(key: "a.mp4") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("could not be reached") == true)
        // Two backoff waits of at least 0.1 s and 0.2 s happened between the three tries.
        #expect(ContinuousClock.now - started >= .milliseconds(300))
    }

    @Test(
        "Storage settings are checked, with the setting named",
        arguments: [
            (["STORAGE_URL": "ftp://x"], "STORAGE_URL"),
            (["STORAGE_URL": "s3://b"], "S3_ENDPOINT"),
            (["STORAGE_URL": "s3://b", "S3_ENDPOINT": "http://h"], "S3_ACCESS_KEY_ID"),
            (["STORAGE_URL": "s3://b", "S3_ENDPOINT": "h", "S3_ACCESS_KEY_ID": "a", "S3_SECRET_ACCESS_KEY": "s"], "S3_ENDPOINT"),
            (
                [
                    "STORAGE_URL": "s3://b", "S3_ENDPOINT": "http://h", "S3_ACCESS_KEY_ID": "a", "S3_SECRET_ACCESS_KEY": "s",
                    "S3_ADDRESSING": "sideways",
                ], "S3_ADDRESSING"
            ),
            ([:], "STORAGE_URL"),
        ])
    func settings(environment: [String: String], named: String) {
        let error = #expect(throws: StorageError.self) { try StorageConfiguration.store(environment: Settings(environment)) }
        #expect(error?.code == .invalidConfiguration && error?.message.contains(named) == true, "\(error?.message ?? "")")
    }
}
