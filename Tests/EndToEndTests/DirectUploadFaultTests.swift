import Foundation
import ServiceTestSupport
import Testing

@testable import JobStore

/// Direct uploads when time or the database is against them, through `moments api` and workers,
/// SeaweedFS (which checks the URLs' signatures and expiry) and PostgreSQL: a PUT that ends after its
/// URL expired, and a start whose job the database refuses. Nothing the client sent is lost; the
/// start can be asked again.
@Suite("Direct uploads under faults (real processes and servers)", .serialized, .heavy)
struct DirectUploadFaultTests {
    typealias System = LiveSystem

    static let json = ["-H", "Content-Type: application/json"]

    static var footageSize: Int {
        (try? FileManager.default.attributesOfItem(atPath: TestFootage.twentySeconds)[.size] as? Int) ?? 0
    }

    /// Reserves a direct upload of the 20 s footage; its id and answer.
    static func reserve(_ base: String, resumable: Bool = false) throws -> (id: String, answer: [String: Any]) {
        let body =
            #"{"filename": "late.mov", "target_duration": 6, "quality": "low", "size_bytes": \#(footageSize)"#
            + (resumable ? #", "resumable": true}"# : "}")
        let reply = try curl(json + ["-d", body, "\(base)/api/v1/uploads"])
        let answer = try CurlAPI.json(reply.body)
        return (try #require(answer["job_id"] as? String, "\(reply.status) \(reply.body)"), answer)
    }

    /// Waits for job `id` to complete; its events then show it completed once.
    static func completesOnce(_ id: String, base: String, store: JobStore, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var last: [String: Any] = [:]
        let done = try await TestServices.eventually(timeout: .seconds(180)) {
            last = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)/status"]).body)
            return ["completed", "failed"].contains(last["status"] as? String ?? "")
        }
        #expect(done && last["status"] as? String == "completed", "\(last)", sourceLocation: sourceLocation)
        let events = try await store.events(try #require(UUID(uuidString: id)))
        #expect(events.filter { $0.to == .completed }.count == 1, "\(events)", sourceLocation: sourceLocation)
    }

    @Test("A PUT that begins before its 60 s URL expires and ends 30 s after it: the start still finds the reservation, and the job completes")
    func putEndsAfterTheURL() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await System.withSystem(workers: 1, settings: ["DIRECT_UPLOAD_URL_SECONDS": "60"], databaseURL: databaseURL) { base in
                let reserved = ContinuousClock.now
                let (id, answer) = try Self.reserve(base)
                let url = try #require(answer["upload_url"] as? String)
                try await Task.sleep(until: reserved + .seconds(50))
                // 40 s at this rate: it ends 90 s after the reservation, 30 s after the URL expired.
                let rate = max(1, Self.footageSize / 40)
                let put = try curl(["-X", "PUT", "--limit-rate", "\(rate)", "--upload-file", TestFootage.twentySeconds, url])
                #expect(put.status == 200, "the PUT began in time: \(put)")
                #expect(ContinuousClock.now - reserved > .seconds(75), "the PUT ended after the URL expired")
                let started = try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"])
                #expect(started.status == 200, "\(started)")
                try await Self.completesOnce(id, base: base, store: store)
            }
        }
    }

    @Test(
        "PostgreSQL refuses the job between the copy and the submit: start answers 503, nothing sent is lost, and the start asked again creates the job, which completes",
        arguments: [false, true])
    func startAfterRefusal(resumable: Bool) async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await System.withSystem(workers: 1, databaseURL: databaseURL) { base in
                let (id, answer) = try Self.reserve(base, resumable: resumable)
                if resumable {
                    let parts = try #require(answer["parts"] as? [[String: Any]])
                    let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: TestFootage.twentySeconds))
                    defer { try? file.close() }
                    for part in parts {
                        let offset = try #require(part["offset"] as? Int), size = try #require(part["size_bytes"] as? Int)
                        let url = try #require(part["url"] as? String)
                        try file.seek(toOffset: UInt64(offset))
                        let slice = FileManager.default.temporaryDirectory.appendingPathComponent("moments-part-\(UUID().uuidString)")
                        try (try file.read(upToCount: size) ?? Data()).write(to: slice)
                        defer { try? FileManager.default.removeItem(at: slice) }
                        #expect(try curl(["-X", "PUT", "--upload-file", slice.path, url]).status == 200)
                    }
                } else {
                    let url = try #require(answer["upload_url"] as? String)
                    #expect(try curl(["-X", "PUT", "--upload-file", TestFootage.twentySeconds, url]).status == 200)
                }
                // The one statement that inserts into jobs is the submit's: refused while this trigger stands.
                try await store.client.query(
                    """
                    CREATE FUNCTION moments_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'refused by the test'; END $$
                    """)
                try await store.client.query("CREATE TRIGGER refuse BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION moments_test_refuse()")
                let refused = try CurlAPI.error(try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"]))
                #expect(refused.status == 503 && refused.code == "service_unavailable", "\(refused)")
                try await store.client.query("DROP TRIGGER refuse ON jobs")
                let started = try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"])
                #expect(started.status == 200, "the start asked again: \(started)")
                try await Self.completesOnce(id, base: base, store: store)
            }
        }
    }
}
