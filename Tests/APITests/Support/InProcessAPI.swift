import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobStore
import Jobs
import MomentsModel
import MomentsSupport
import Prometheus
import ServiceTestSupport
import Storage
import Testing

@testable import API

/// The API in this process, built by `buildApplication` as `moments api` builds it (its services,
/// its migrations), over a fresh PostgreSQL database, with the in-memory queue, reservations and
/// rate limits and local storage in a scratch folder. Requests go straight
/// to the router (HummingbirdTesting's `.router`), so a contract, error or access test takes
/// milliseconds and starts no process. The end-to-end tests use `LiveSystem` instead.
struct InProcessAPI: Sendable {
    let client: any TestClientProtocol
    let store: JobStore
    let queue: MemoryQueue
    let storage: LocalObjectStore
    /// Where the API spools uploads while it checks them.
    let uploads: URL

    /// Runs `body` against an API configured from `settings` (the variables `moments api` reads;
    /// anonymous use unless they say `AUTH_REQUIRED`).
    /// With `presigning`, storage hands out signed URLs as S3 does (direct uploads, download redirects).
    /// With `live`, the API listens on a port of its own (`client.port`) with the server
    /// `moments api` runs, so requests cross its channel pipeline (`StatusPollHandler`) too.
    /// `routes` may add routes of the test's own to the router.
    static func run(
        _ settings: [String: String] = [:], presigning: Bool = false, live: Bool = false,
        routes: @escaping @Sendable (Router<MomentsRequestContext>) -> Void = { _ in },
        _ body: @Sendable (InProcessAPI) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-inprocess-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServices.withDatabase(migrated: false) { store, databaseURL in
            let uploads = folder.appendingPathComponent("uploads")
            try FileManager.default.createDirectory(at: uploads, withIntermediateDirectories: true)
            let environment = ["AUTH_REQUIRED": "false", "UPLOAD_DIR": uploads.path]
                .merging(settings) { $1 }
            var configuration = try APIConfiguration(environment: Settings(environment))
            configuration.tracing = !live  // live: as `moments api` without an exporter
            let queue = MemoryQueue()
            let storage = try LocalObjectStore(root: folder.appendingPathComponent("objects"))
            // The application runs its own pool over the test's database and migrates it before
            // the first request, as `moments api` does; the test reads through `store`.
            let services = APIServices(
                store: JobStore(configuration: try DatabaseConfiguration(url: databaseURL), logger: TestServices.logger),
                queue: queue, storage: presigning ? SigningLocalStore(local: storage) : storage,
                reservations: MemoryPersistStore(), rateLimits: MemoryRateLimitStore(), logger: TestServices.logger)
            let app = buildApplication(
                configuration: configuration, services: services, metrics: PrometheusCollectorRegistry(),
                logger: TestServices.logger, routes: routes)
            try await app.test(live ? .live : .router) { client in
                try await body(InProcessAPI(client: client, store: store, queue: queue, storage: storage, uploads: uploads))
            }
        }
    }

    /// One answer: status, headers and body, with the JSON views the tests need.
    struct Reply: Sendable {
        var status: Int
        var headers: HTTPFields
        var body: Data

        var text: String { String(decoding: body, as: UTF8.self) }

        func json() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any], "a JSON object: \(status) \(text)")
        }

        /// The one error shape: the status, `error.code` and `error.message`.
        func error() throws -> (status: Int, code: String, message: String) {
            let error = try #require(try json()["error"] as? [String: Any], "the one error shape: \(status) \(text)")
            return (status, error["code"] as? String ?? "", error["message"] as? String ?? "")
        }

        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
    }

    func send(_ method: HTTPRequest.Method, _ path: String, headers: HTTPFields = [:], body: Data? = nil) async throws -> Reply {
        try await client.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { response in
            Reply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: response.body))
        }
    }

    func get(_ path: String, headers: HTTPFields = [:]) async throws -> Reply {
        try await send(.get, path, headers: headers)
    }

    /// POSTs `object` as JSON.
    func post(_ path: String, json object: [String: Any], headers: HTTPFields = [:]) async throws -> Reply {
        var headers = headers
        headers[.contentType] = "application/json"
        return try await send(.post, path, headers: headers, body: try JSONSerialization.data(withJSONObject: object))
    }

    /// A multipart upload to `/api/v1/upload`, as the app sends it: `fields`, then the file (if any)
    /// declared `video/mp4` whatever it holds.
    func upload(
        _ file: Data?, filename: String = "IMG_0001.MOV", fields: [String: String] = [:],
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        let boundary = "moments-\(UUID().uuidString)"
        var body = Data()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
        }
        if let file {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(filename)\"\r\n".utf8))
            body.append(Data("Content-Type: video/mp4\r\n\r\n".utf8))
            body.append(file)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        var headers = headers
        headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await send(.post, "/api/v1/upload", headers: headers, body: body)
    }

    /// `body` sent to `/api/v1/upload` as `multipart/form-data` with `boundary`, whatever it holds.
    func upload(raw body: Data, boundary: String) async throws -> Reply {
        try await send(.post, "/api/v1/upload", headers: [.contentType: "multipart/form-data; boundary=\(boundary)"], body: body)
    }

    /// Registers a device; returns the headers that send its token.
    func device(name: String = "Test iPhone", headers: HTTPFields = [:]) async throws -> HTTPFields {
        let reply = try await post("/api/v1/devices", json: ["name": name], headers: headers)
        let token = try #require(try reply.json()["token"] as? String, "\(reply.status) \(reply.text)")
        var auth = headers
        auth[.authorization] = "Bearer \(token)"
        return auth
    }

    /// The 20 s test footage, read once; a fixture that could not be made fails the test with its cause.
    static var footage: Data {
        get throws { try readFootage.get() }
    }

    private static let readFootage = Result { try Data(contentsOf: URL(fileURLWithPath: TestFootage.twentySeconds)) }
}

/// Local storage that signs URLs as S3 would (`https://storage.test/<key>?X-Method=…&X-Expires=…`),
/// so the direct-upload and redirect routes run in process. Nothing answers at that address: a
/// test that "uploads" puts the file into the local store itself.
struct SigningLocalStore: PresigningObjectStore, ForwardingObjectStore {
    let local: LocalObjectStore

    var inner: any ObjectStore { local }

    var presigning: (any PresigningObjectStore)? { self }

    func signedURL(for key: String, method: String, expires: Duration, contentLength: Int64?) throws(StorageError) -> URL {
        let length = contentLength.map { "&X-Content-Length=\($0)" } ?? ""
        return URL(string: "https://storage.test/\(key)?X-Method=\(method)&X-Expires=\(expires.components.seconds)\(length)")!
    }
}
