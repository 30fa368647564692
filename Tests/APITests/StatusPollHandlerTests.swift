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
            // The client's request id makes both answers carry the same one (each made its own otherwise).
            let cases: [(String, [String], Int)] = [
                ("own job", ["Authorization: \(annToken)", "Host: api.test", "X-Request-Id: poll-1"], 200),
                (
                    "completed, behind a proxy",
                    ["Authorization: \(annToken)", "Host: moments.example", "X-Forwarded-Proto: https", "X-Request-Id: poll-2"], 200
                ),
                ("another device's job", ["Authorization: \(bobToken)", "X-Request-Id: 3F2504E0-4F89-11D3-9A0C-0305E82C3301"], 404),
                ("unknown token", ["Authorization: Bearer mdt_not-a-token", "X-Request-Id: app:ios/7.2"], 401),
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
            let asked = ["Authorization: \(annToken)", "X-Request-Id: missing-1"]
            let fast = try await RawHTTP.get(port: port, path: missing, headers: asked)
            let routed = try await RawHTTP.get(port: port, path: missing + "?via=router", headers: asked)
            #expect(fast.status == 404 && fast.body.contains("job_not_found") && fast.body.contains(#""request_id":"missing-1""#))
            #expect(fast.comparable == routed.comparable)
            // Without one (or with a malformed one), each answer makes its own, in the body of an error too.
            var made: [String] = []
            for headers in [["Authorization: \(annToken)"], ["Authorization: \(annToken)", "X-Request-Id: two words"]] {
                for path in ["/api/v1/jobs/\(own.uuidString.lowercased())/status", missing] {
                    let reply = try await RawHTTP.get(port: port, path: path, headers: headers)
                    let id = try #require(reply.header("x-request-id"), "\(reply.text)")
                    #expect(id.wholeMatch(of: /[0-9a-f]{32}/) != nil, "\(id)")
                    #expect(reply.status == 200 || reply.body.contains(#""request_id":"\#(id)""#), "\(reply.text)")
                    made.append(id)
                }
            }
            #expect(Set(made).count == made.count, "\(made)")
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
