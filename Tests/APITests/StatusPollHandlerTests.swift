import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

@testable import API
@testable import JobStore

#if canImport(Glibc)
    import Glibc
#endif

/// The status poll answered in the channel pipeline (`StatusPollHandler`) against the route it
/// stands in for: the same bytes and the same errors, and answers in the order of the requests when
/// polls and other requests are pipelined on one connection (the request metrics are checked
/// end to end, in `APIEndToEndTests`, where a process has them). The API listens on
/// a port (`InProcessAPI.run(live: true)`) over the real PostgreSQL. A poll with a query string
/// goes to the router, so each comparison is made on one server in one test.
@Suite("Status polls in the channel pipeline", .quiet)
struct StatusPollHandlerTests {
    @Test("Own job, completed job behind a proxy, another device's job, a missing job and an unknown token: the bytes the router answers")
    func sameAnswers() async throws {
        try await InProcessAPI.run(live: true) { api in
            let port = try #require(api.client.port)
            let ann = try await api.device(name: "Ann")
            let bob = try await api.device(name: "Bob")
            let own = try #require(UUID(uuidString: try await api.upload(try InProcessAPI.footage, headers: ann).json()["job_id"] as? String ?? ""))
            let done = try #require(UUID(uuidString: try await api.upload(try InProcessAPI.footage, headers: ann).json()["job_id"] as? String ?? ""))
            try await api.store.client.query(
                """
                UPDATE jobs SET status = 'completed', progress = 100, completed_at = now(), result_key = 'results/x.mp4',
                    poster_key = 'results/x.jpg', source_duration = 20.5, segments_selected = 4, message = 'Done "quoted"'
                WHERE id = \(done)
                """, logger: TestServices.logger)
            let annToken = try #require(ann[.authorization])
            let bobToken = try #require(bob[.authorization])
            let cases: [(String, [String], Int)] = [
                ("own job", ["Authorization: \(annToken)", "Host: api.test"], 200),
                ("completed, behind a proxy", ["Authorization: \(annToken)", "Host: moments.example", "X-Forwarded-Proto: https"], 200),
                ("another device's job", ["Authorization: \(bobToken)"], 404),
                ("unknown token", ["Authorization: Bearer mdt_not-a-token"], 401),
            ]
            for (what, headers, status) in cases {
                let job = what.hasPrefix("completed") ? done : own
                let path = "/api/v1/jobs/\(job.uuidString.lowercased())/status"
                let fast = try await RawHTTP.get(port: port, path: path, headers: headers)
                let routed = try await RawHTTP.get(port: port, path: path + "?via=router", headers: headers)
                #expect(fast.status == status, "\(what): \(fast.text)")
                #expect(fast.comparable == routed.comparable, "\(what):\n\(fast.text)\n---\n\(routed.text)")
                #expect(fast.header("date") != nil && fast.header("server") == "moments", "\(what): \(fast.text)")
            }
            let missing = "/api/v1/jobs/\(UUID().uuidString)/status"
            let fast = try await RawHTTP.get(port: port, path: missing, headers: ["Authorization: \(annToken)"])
            let routed = try await RawHTTP.get(port: port, path: missing + "?via=router", headers: ["Authorization: \(annToken)"])
            #expect(fast.status == 404 && fast.body.contains("job_not_found"))
            #expect(fast.comparable == routed.comparable)
        }
    }

    @Test("Polls pipelined with other requests on one connection are answered in order, also when the client half-closes or sends garbage after")
    func pipelinedInOrder() async throws {
        let routes: @Sendable (Router<MomentsRequestContext>) -> Void = { router in
            router.get("test/slow") { _, _ -> String in
                try await Task.sleep(for: .milliseconds(300))
                return "slow"
            }
        }
        try await InProcessAPI.run(live: true, routes: routes) { api in
            let port = try #require(api.client.port)
            let ann = try await api.device(name: "Ann")
            let token = try #require(ann[.authorization])
            var jobs: [UUID] = []
            for _ in 0..<3 {
                jobs.append(
                    try #require(UUID(uuidString: try await api.upload(try InProcessAPI.footage, headers: ann).json()["job_id"] as? String ?? "")))
            }
            func poll(_ job: UUID, _ extra: String = "") -> String {
                "GET /api/v1/jobs/\(job.uuidString.lowercased())/status\(extra) HTTP/1.1\r\nHost: api.test\r\nAuthorization: \(token)\r\n\r\n"
            }
            // poll, router, poll, poll, a routed poll, /me (router), poll, and the router's closing request.
            let requests = [
                poll(jobs[0]), "GET /health HTTP/1.1\r\nHost: api.test\r\n\r\n", poll(jobs[1]), poll(jobs[2]),
                poll(jobs[0], "?via=router"), "GET /api/v1/me HTTP/1.1\r\nHost: api.test\r\nAuthorization: \(token)\r\n\r\n",
                poll(jobs[1]), "GET /health HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n",
            ]
            for round in 0..<20 {
                let replies = try await RawHTTP.exchange(port: port, requests.joined())
                #expect(replies.map(\.status) == [200, 200, 200, 200, 200, 200, 200, 200], "round \(round)")
                let expected: [String?] = [
                    jobs[0].uuidString, nil, jobs[1].uuidString, jobs[2].uuidString, jobs[0].uuidString, nil,
                    jobs[1].uuidString, nil,
                ]
                for (index, reply) in replies.enumerated() {
                    if let job = expected[index] {
                        #expect(reply.body.contains("\"job_id\":\"\(job.lowercased())\""), "round \(round), answer \(index): \(reply.body)")
                    } else {
                        #expect(!reply.body.contains("job_id"), "round \(round), answer \(index): \(reply.body)")
                    }
                }
                guard replies.count == requests.count else { break }
            }

            // A request the router answers after 300 ms, then a poll (answered in a millisecond):
            // the poll's answer still comes second.
            let slow = "GET /test/slow HTTP/1.1\r\nHost: api.test\r\n\r\n"
            let replies = try await RawHTTP.exchange(
                port: port, slow + poll(jobs[2]) + "GET /health HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
            #expect(replies.map(\.status) == [200, 200, 200])
            #expect(replies.first?.body == "slow", "the slow answer first: \(replies.map(\.body))")
            #expect(replies.dropFirst().first?.body.contains(jobs[2].uuidString.lowercased()) == true, "then the poll's")

            // A client that ends its side after the request (`shutdown(SHUT_WR)`) still gets the
            // answer, and so does one that sends bytes that do not parse after it: then the 400.
            for _ in 0..<5 {
                let answer = try await RawHTTP.exchange(port: port, poll(jobs[1]), halfClose: true)
                #expect(answer.map(\.status) == [200])
                let garbled = try await RawHTTP.exchange(port: port, poll(jobs[1]) + "NOT HTTP AT ALL\r\n\r\n")
                #expect(garbled.map(\.status) == [200, 400])
            }
        }
    }

    @Test("STATUS_FAST_PATH: the pipeline answers the poll unless it is false; anything else is refused by name")
    func fastPathSetting() throws {
        let logger = Logger(label: "test")
        // Nothing here connects: the server's handlers are only built.
        let store = JobStore(configuration: try DatabaseConfiguration(url: "postgres://u:p@127.0.0.1:1/none"), logger: logger)
        for (value, on) in [(nil, true), ("true", true), ("1", true), ("false", false), ("off", false)] as [(String?, Bool)] {
            let configuration = try APIConfiguration(environment: Settings(value.map { ["STATUS_FAST_PATH": $0] } ?? [:]))
            #expect((statusFastPath(configuration: configuration, store: store, logger: logger) != nil) == on, "\(value ?? "unset")")
        }
        #expect(throws: SettingError("STATUS_FAST_PATH must be true or false, not 'maybe'.")) {
            try APIConfiguration(environment: ["STATUS_FAST_PATH": "maybe"])
        }
    }

    @Test("Only the poll as apps send it is answered in the pipeline")
    func whichRequests() throws {
        let id = UUID()
        func request(_ path: String, _ fields: HTTPFields = [:], method: HTTPRequest.Method = .get) -> HTTPRequest {
            HTTPRequest(method: method, scheme: nil, authority: "api.test", path: path, headerFields: fields)
        }
        let path = "/api/v1/jobs/\(id.uuidString.lowercased())/status"
        #expect(StatusPollRoute.job(of: request(path)) == id)
        #expect(StatusPollRoute.job(of: request("/api/v1/jobs/\(id.uuidString)/status")) == id, "upper-case ids, as the router reads them")
        #expect(StatusPollRoute.job(of: request(path, method: .head)) == nil)
        #expect(StatusPollRoute.job(of: request(path + "?a=1")) == nil)
        #expect(StatusPollRoute.job(of: request(path + "/")) == nil)
        #expect(StatusPollRoute.job(of: request("/api/v1/jobs/\(id.uuidString.lowercased())/statux")) == nil)
        #expect(StatusPollRoute.job(of: request("/api/v2/jobs/\(id.uuidString.lowercased())/status")) == nil)
        #expect(StatusPollRoute.job(of: request("/api/v1/jobs/not-a-uuid-but-thirty-six-characters/status")) == nil)
        #expect(StatusPollRoute.job(of: request(path, [.connection: "close"])) == nil)
        #expect(StatusPollRoute.job(of: request(path, [.contentLength: "3"])) == nil)
        #expect(StatusPollRoute.job(of: request(path, [.transferEncoding: "chunked"])) == nil)
        #expect(StatusPollRoute.token(of: request(path, [.authorization: "Bearer mdt_abc"])) == DeviceToken.sha256("mdt_abc"))
        #expect(StatusPollRoute.token(of: request(path, [.authorization: "bearer  mdt_abc"])) == nil, "the router reads other spellings")
        #expect(StatusPollRoute.token(of: request(path)) == nil)
    }

    @Test("The Date header is RFC 9110's IMF-fixdate, as Foundation formats it")
    func dates() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        let edges = [0, 1, 86_399, 86_400, 951_782_400, 951_868_800, 4_107_542_400, 784_111_777]  // 2000-02-29, 2000-03-01, 2100-03-01
        for seconds in edges + (0..<2000).map({ _ in Int.random(in: 0...4_102_444_800, using: &generator) }) {
            #expect(HTTPDate.format(seconds) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))), "\(seconds)")
        }
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}

/// HTTP/1.1 over a plain socket: what a test needs to see a server's exact bytes and to pipeline.
enum RawHTTP {
    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: String
        var text: String

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }

        /// The status, every header but `Date` in order, and the body.
        var comparable: String {
            "\(status)\n" + headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }.joined(separator: "\n")
                + "\n\n" + body
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    static func get(port: Int, path: String, headers: [String]) async throws -> Reply {
        let request =
            "GET \(path) HTTP/1.1\r\n" + (headers.contains { $0.lowercased().hasPrefix("host:") } ? "" : "Host: api.test\r\n")
            + headers.map { "\($0)\r\n" }.joined() + "\r\n"
        let replies = try await exchange(port: port, request, expecting: 1)
        guard let reply = replies.first else { throw Failure(description: "no answer to \(path)") }
        return reply
    }

    /// Sends `bytes` at once and reads answers until the server closes or `expecting` have come
    /// (5 s at most). The socket blocks a thread of its own, not one of the tasks' (the server in
    /// this process needs them to answer).
    /// With `halfClose`, the socket's sending side is shut once everything is sent.
    static func exchange(port: Int, _ text: String, expecting: Int = .max, halfClose: Bool = false) async throws -> [Reply] {
        try await exchange(port: port, Array(text.utf8), expecting: expecting, halfClose: halfClose)
    }

    static func exchange(port: Int, _ bytes: [UInt8], expecting: Int = .max, halfClose: Bool = false) async throws -> [Reply] {
        let result = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: Result { try blockingExchange(port: port, bytes, expecting: expecting, halfClose: halfClose) })
            }.start()
        }
        return try result.get()
    }

    private static func blockingExchange(port: Int, _ data: [UInt8], expecting: Int, halfClose: Bool) throws -> [Reply] {
        let socket = try Loopback.connect(port: port, receiveTimeout: .seconds(5))
        defer { close(socket) }
        var sent = 0
        while sent < data.count {
            let n = data[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "send: \(errno)") }
            sent += n
        }
        if halfClose { shutdown(socket, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var replies: [Reply] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while replies.count < expecting {
            let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
            replies = parse(received)
        }
        return parse(received)
    }

    /// The complete answers in `bytes` (each with a `Content-Length`).
    static func parse(_ bytes: [UInt8]) -> [Reply] {
        var replies: [Reply] = []
        var rest = bytes[...]
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let end = rest.firstRange(of: separator) {
            let head = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
            let lines = head.components(separatedBy: "\r\n")
            let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            let headers = lines.dropFirst().compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
            guard rest.distance(from: end.upperBound, to: rest.endIndex) >= length else { break }
            let bodyEnd = rest.index(end.upperBound, offsetBy: length)
            let body = String(decoding: rest[end.upperBound..<bodyEnd], as: UTF8.self)
            replies.append(Reply(status: status, headers: headers, body: body, text: head + "\r\n\r\n" + body))
            rest = rest[bodyEnd...]
        }
        return replies
    }
}
