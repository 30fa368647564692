import Foundation
import JobQueue
import JobStore
import ServiceTestSupport
import Testing

/// `moments jobs list|show|retry|cancel` as an operator runs them, against the real stores.
@Suite("Admin commands (real PostgreSQL and Redis)", .serialized, .heavy)
struct AdminCommandTests {
    @Test("list, show, retry and cancel: tables and JSON, and clear refusals")
    func adminCommands() async throws {
        try await TestServices.withDatabase { store, databaseURL in
            let prefix = TestServices.uniquePrefix()
            let environment = ["DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 9),
                               "MOMENTS_QUEUE_PREFIX": prefix, "LOG_LEVEL": "error"]
            // Three jobs: one failed permanently, one pending, one completed.
            let failed = try await store.create(NewJob(originalFilename: "broken.mov", sourceKey: "sources/broken", maxAttempts: 1))
            let pending = try await store.create(NewJob(originalFilename: "waiting.mov", sourceKey: "sources/waiting"))
            let done = try await store.create(NewJob(originalFilename: "done.mov", sourceKey: "sources/done"))
            guard case .claimed(let lease, _) = try await store.claim(failed.id, worker: "w", lease: .seconds(60)),
                  case .claimed(let doneLease, _) = try await store.claim(done.id, worker: "w", lease: .seconds(60)) else {
                Issue.record("claims failed")
                return
            }
            _ = try await store.fail(lease, code: "corrupt_media", message: "The file is damaged.", retryable: false, retryDelay: .zero)
            _ = try await store.complete(doneLease, result: JobResult(resultKey: "results/done.mp4", resultSize: 10))

            let all = try TestServices.moments(["jobs", "list"], environment: environment)
            #expect(all.status == 0, "\(all.err)")
            let lines = all.out.split(separator: "\n")
            #expect(lines.first?.hasPrefix("id") == true && lines.count == 4, "\(all.out)")
            #expect(all.out.contains("corrupt_media") && all.out.contains("waiting.mov"))

            let failedOnly = try TestServices.moments(["jobs", "list", "--status", "failed", "--since", "1h", "--json"], environment: environment)
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(failedOnly.out.utf8)) as? [[String: Any]], "\(failedOnly.out)")
            try #require(listed.count == 1, "\(listed)")
            #expect(listed[0]["job_id"] as? String == failed.id.uuidString.lowercased())
            #expect(listed[0]["error_code"] as? String == "corrupt_media")
            let bad = try TestServices.moments(["jobs", "list", "--status", "lost"], environment: environment)
            #expect(bad.status != 0 && bad.err.contains("lost"))

            let show = try TestServices.moments(["jobs", "show", failed.id.uuidString], environment: environment)
            #expect(show.status == 0 && show.out.contains("corrupt_media: The file is damaged.") && show.out.contains("history"), "\(show.out)")
            #expect(show.out.contains("processing  failed"), "the history rows: \(show.out)")

            let retry = try TestServices.moments(["jobs", "retry", failed.id.uuidString], environment: environment)
            #expect(retry.status == 0 && retry.out.contains("pending again"), "\(retry.out) \(retry.err)")
            let retried = try #require(try await store.job(failed.id))
            #expect(retried.status == .pending && retried.errorCode == nil && retried.maxAttempts == retried.attempt + 3)
            #expect(try await store.events(failed.id).last?.detail == "retried by an operator")
            let queue = RedisQueue(client: RedisClient(configuration: try RedisConfiguration(url: try TestServices.redisURL(database: 9)),
                                                       logger: TestServices.logger),
                                   keys: QueueKeys(prefix: prefix), logger: TestServices.logger)
            #expect(try await queue.contains([failed.id]) == [true], "queued in Redis again")

            let refused = try TestServices.moments(["jobs", "retry", pending.id.uuidString], environment: environment)
            #expect(refused.status == 1 && refused.err.contains("error: conflict:") && refused.err.contains("only failed jobs"), "\(refused.err)")

            let cancel = try TestServices.moments(["jobs", "cancel", pending.id.uuidString, "--json"], environment: environment)
            let cancelled = try JSONSerialization.jsonObject(with: Data(cancel.out.utf8)) as? [String: Any]
            #expect(cancel.status == 0 && cancelled?["status"] as? String == "cancelled", "\(cancel.out) \(cancel.err)")
            let again = try TestServices.moments(["jobs", "cancel", done.id.uuidString], environment: environment)
            #expect(again.status == 1 && again.err.contains("already ended completed"))
            let unknown = try TestServices.moments(["jobs", "show", UUID().uuidString], environment: environment)
            #expect(unknown.status == 1 && unknown.err.contains("error: not_found:"))
            let notAnID = try TestServices.moments(["jobs", "cancel", "nope"], environment: environment)
            #expect(notAnID.status == 1 && notAnID.err.contains("is not a job id"))
            try? await queue.destroy()
        }
    }

    @Test("Logs are one JSON object per line when standard error is not a terminal; LOG_FORMAT is checked")
    func jsonLogs() async throws {
        try await TestServices.withDatabase(migrated: false) { _, databaseURL in
            let environment = ["DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 9), "LOG_LEVEL": "info"]
            let migrate = try TestServices.moments(["migrate"], environment: environment)
            #expect(migrate.status == 0, "\(migrate.err)")
            let lines = migrate.err.split(separator: "\n")
            #expect(!lines.isEmpty)
            let entries = try lines.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "a JSON line: \(line)")
            }
            let migrated = try #require(entries.first { $0["message"] == "schema migrated" }, "\(entries)")
            #expect(migrated["level"] == "info" && migrated["label"] == "moments.migrate" && migrated["versions"] != nil)
            #expect(migrated["ts"]?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil)

            let wrong = try TestServices.moments(["migrate"], environment: environment.merging(["LOG_FORMAT": "xml"]) { $1 })
            #expect(wrong.status == 1 && wrong.err.contains("LOG_FORMAT must be json or text"), "\(wrong.err)")
        }
    }

    @Test("Each role refuses a bad setting at start-up with a message naming the variable",
          arguments: [
            ("worker", "LOG_LEVEL", "loud"), ("worker", "WORKER_CONCURRENCY", "0"), ("worker", "JOB_RETENTION_DAYS", "7"),
            ("worker", "DELETE_SOURCE_AFTER_SUCCESS", "sometimes"), ("worker", "WEBHOOK_SECRET", "short"),
            ("worker", "METRICS_PORT", "99999"), ("api", "MAX_UPLOAD_BYTES", "lots"), ("api", "AUTH_REQUIRED", "perhaps"),
            ("api", "RATE_LIMIT_UPLOADS_PER_OWNER", "-1"), ("migrate", "DATABASE_URL", "mysql://db/moments"),
            ("worker", "REDIS_URL", "rediss://cache:6380"), ("worker", "STORAGE_URL", "ftp://files/moments"),
          ])
    func badSettings(role: String, variable: String, value: String) throws {
        var environment = ["DATABASE_URL": "postgres://moments@127.0.0.1:1/moments", "REDIS_URL": "redis://127.0.0.1:1/0",
                           "STORAGE_URL": "file:///tmp/moments-objects", "METRICS_PORT": "0"]
        environment[variable] = value
        let started = ContinuousClock.now
        let run = try TestServices.moments([role], environment: environment)
        #expect(run.status != 0)
        #expect(run.err.contains(variable), "the refusal names \(variable): \(run.err)")
        #expect(ContinuousClock.now - started < .seconds(10), "refused at start-up, not after trying to connect")
    }
}
