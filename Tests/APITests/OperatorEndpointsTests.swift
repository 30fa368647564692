import API
import Foundation
import HTTPTypes
import JobStore
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

/// `/metrics` and `/ready` are on the public port: a token guards the first, and neither lets a
/// flood of requests turn into a flood of queries against the shared stores.
@Suite("Operator endpoints (in process)", .quiet)
struct OperatorEndpointsTests {
    static let token = "metrics-token-0123456789abcdef"

    @Test("With METRICS_TOKEN, /metrics answers only a scrape that sends it (401 metrics_token_required otherwise)")
    func metricsToken() async throws {
        try await InProcessAPI.run(["METRICS_TOKEN": Self.token]) { api in
            let missing = try await api.get("/metrics").error()
            #expect(missing.status == 401 && missing.code == "metrics_token_required")
            let wrong = try await api.get("/metrics", headers: [.authorization: "Bearer \(Self.token)x"])
            #expect(wrong.status == 401 && wrong.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            let scraped = try await api.get("/metrics", headers: [.authorization: "Bearer \(Self.token)"])
            #expect(scraped.status == 200 && scraped.text.contains("moments_queue_ready"), "\(scraped.text.prefix(200))")
        }
        for bad in ["short", "has spaces in the token here"] {
            let error = #expect(throws: SettingError.self) { try APIConfiguration(environment: Settings(["METRICS_TOKEN": bad])) }
            #expect(error?.message.contains("METRICS_TOKEN") == true)
        }
    }

    @Test("The stores behind /metrics are read at most once per 5 s: a job created between two scrapes shows only after that")
    func metricsRefreshIsShared() async throws {
        try await InProcessAPI.run { api in
            let line = #"moments_jobs{status="pending"} 1"#
            #expect(!(try await api.get("/metrics").text.contains(line)))
            _ = try await api.store.create(NewJob(id: UUID(), sourceKey: "sources/x.mp4"))
            #expect(!(try await api.get("/metrics").text.contains(line)), "within 5 s the last reading is served")
            let fresh = try await TestServices.eventually(timeout: .seconds(10)) { try await api.get("/metrics").text.contains(line) }
            #expect(fresh, "after 5 s a scrape reads the stores again")
        }
    }

    @Test("/ready?deep=1 is checked once per 2 s however often it is asked: 40 requests at once share one check")
    func readinessIsShared() async throws {
        try await InProcessAPI.run { api in
            let answers = try await withThrowingTaskGroup(of: InProcessAPI.Reply.self) { group in
                for _ in 0..<40 { group.addTask { try await api.get("/ready?deep=1") } }
                return try await group.reduce(into: []) { $0.append(try $1.json()) }
            }
            let times = Set(answers.compactMap { $0["checked_at"] as? String })
            #expect(answers.count == 40 && answers.allSatisfy { $0["status"] as? String == "ready" })
            #expect(times.count == 1, "one check for all: \(times)")
            try await Task.sleep(for: .milliseconds(2100))
            let later = try await api.get("/ready?deep=1").json()["checked_at"] as? String
            #expect(later != nil && !times.contains(later!), "checked again after 2 s")
        }
    }
}
