import Foundation
import JobQueue
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// `moments jobs list|show|retry|cancel` as an operator runs them, against the real stores.
@Suite("Admin commands (real PostgreSQL and Redis)", .serialized, .heavy)
struct AdminCommandTests {
    @Test("list, show, retry and cancel: tables and JSON, and clear refusals")
    func adminCommands() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let prefix = TestServices.uniquePrefix()
            let environment = [
                "DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 9),
                "MOMENTS_QUEUE_PREFIX": prefix, "LOG_LEVEL": "error",
            ]
            // Three jobs: one failed permanently, one pending, one completed.
            let failed = try await store.create(NewJob(originalFilename: "broken.mov", sourceKey: "sources/broken", maxAttempts: 1))
            let pending = try await store.create(NewJob(originalFilename: "waiting.mov", sourceKey: "sources/waiting"))
            let done = try await store.create(NewJob(originalFilename: "done.mov", sourceKey: "sources/done"))
            guard case .claimed(let lease, _) = try await store.claim(failed.id, worker: "w", lease: .seconds(60)),
                case .claimed(let doneLease, _) = try await store.claim(done.id, worker: "w", lease: .seconds(60))
            else {
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
            #expect(try await store.events(failed.id).last?.detail?.hasPrefix("retried by cli:") == true)
            let queue = RedisQueue(
                client: RedisClient(
                    configuration: try RedisConfiguration(url: try TestServices.redisURL(database: 9)),
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

    @Test("Bulk retry, cancel and delete by filter (a count first, then --yes), queue pause and resume, workers, webhook redelivery; all audited")
    func bulkCommands() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let objects = FileManager.default.temporaryDirectory.appendingPathComponent("moments-cli-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: objects.appendingPathComponent("sources"), withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: objects) }
            let environment = [
                "DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 9),
                "MOMENTS_QUEUE_PREFIX": TestServices.uniquePrefix(), "LOG_LEVEL": "error", "STORAGE_URL": objects.absoluteString,
            ]
            // Four failed with one code, one with another, two pending; each with a source object.
            var failed: [UUID] = []
            for (index, code) in ["corrupt_media", "corrupt_media", "corrupt_media", "corrupt_media", "too_long"].enumerated() {
                let key = "sources/failed-\(index)"
                try Data("x".utf8).write(to: objects.appendingPathComponent(key))
                let job = try await store.create(NewJob(originalFilename: "f\(index).mov", sourceKey: key, maxAttempts: 1))
                guard case .claimed(let lease, _) = try await store.claim(job.id, worker: "w", lease: .seconds(60)) else { return }
                _ = try await store.fail(lease, code: code, message: "planted", retryable: false, retryDelay: .zero)
                failed.append(job.id)
            }
            let pending = [
                try await store.create(NewJob(originalFilename: "p1.mov", sourceKey: "sources/p1")),
                try await store.create(NewJob(originalFilename: "p2.mov", sourceKey: "sources/p2")),
            ]

            let count = try TestServices.moments(["jobs", "retry", "--code", "corrupt_media"], environment: environment)
            #expect(count.status == 0 && count.out.contains("4 jobs match") && count.out.contains("add --yes"), "\(count.out) \(count.err)")
            #expect(try await store.job(failed[0])?.status == .failed, "nothing happens without --yes")
            let both = try TestServices.moments(["jobs", "retry", failed[0].uuidString, "--code", "x"], environment: environment)
            #expect(both.status != 0 && both.err.contains("not both"))

            let retry = try TestServices.moments(["jobs", "retry", "--code", "corrupt_media", "--since", "1h", "--yes"], environment: environment)
            #expect(retry.status == 0 && retry.out.contains("done: 4 retried, 0 skipped"), "\(retry.out) \(retry.err)")
            for id in failed.prefix(4) { #expect(try await store.job(id)?.status == .pending) }
            #expect(try await store.job(failed[4])?.status == .failed)

            let cancel = try TestServices.moments(["jobs", "cancel", "--status", "pending", "--file", "P", "--yes"], environment: environment)
            #expect(cancel.status == 0 && cancel.out.contains("done: 2 cancelled"), "\(cancel.out) \(cancel.err)")
            for job in pending { #expect(try await store.job(job.id)?.status == .cancelled) }

            let refused = try TestServices.moments(["jobs", "delete", failed[0].uuidString], environment: environment)
            #expect(refused.status == 1 && refused.err.contains("cancel it before deleting"), "\(refused.err)")
            let delete = try TestServices.moments(["jobs", "delete", failed[4].uuidString], environment: environment)
            #expect(delete.status == 0 && delete.out.contains("deleted"), "\(delete.out) \(delete.err)")
            #expect(try await store.job(failed[4]) == nil)
            #expect(!FileManager.default.fileExists(atPath: objects.appendingPathComponent("sources/failed-4").path), "its source is gone")
            let noStorage = try TestServices.moments(
                ["jobs", "delete", "--status", "cancelled", "--yes"],
                environment: environment.merging(["STORAGE_URL": ""]) { $1 })
            #expect(noStorage.status == 1 && noStorage.err.contains("STORAGE_URL"), "\(noStorage.err)")
            let bulkDelete = try TestServices.moments(["jobs", "delete", "--status", "cancelled", "--yes"], environment: environment)
            #expect(bulkDelete.status == 0 && bulkDelete.out.contains("done: 2 deleted"), "\(bulkDelete.out) \(bulkDelete.err)")

            #expect(try TestServices.moments(["queue", "pause"], environment: environment).status == 0)
            #expect(try TestServices.moments(["queue", "stats"], environment: environment).out.contains("PAUSED"))
            #expect(try TestServices.moments(["queue", "resume"], environment: environment).status == 0)
            let workers = try TestServices.moments(["queue", "workers"], environment: environment)
            #expect(workers.status == 0 && workers.out.contains("(no worker in the last day)"), "\(workers.out) \(workers.err)")

            // A webhook delivery (as the trigger writes one), sent again.
            try await store.client.query(
                """
                INSERT INTO webhook_deliveries (job_id, url, event, delivered_at) VALUES (\(failed[1]), 'https://example.com/hook', 'job.failed', now())
                """, logger: TestServices.logger)
            let first = try #require(try await store.webhookDeliveries(job: failed[1]).first)
            let redeliver = try TestServices.moments(["webhooks", "redeliver", "\(first.id)"], environment: environment)
            #expect(redeliver.status == 0 && redeliver.out.contains("repeats \(first.id)"), "\(redeliver.out) \(redeliver.err)")
            let deliveries = try await store.webhookDeliveries(job: failed[1])
            #expect(deliveries.count == 2 && deliveries[1].redeliveryOf == first.id && deliveries[1].state == "waiting")
            #expect(try TestServices.moments(["webhooks", "list", failed[1].uuidString], environment: environment).out.contains("job.failed"))
            #expect(try TestServices.moments(["webhooks", "redeliver", "999999"], environment: environment).err.contains("not_found"))

            let audit = try await store.operations(limit: 100)
            #expect(audit.allSatisfy { $0.actor.hasPrefix("cli:") })
            #expect(Set(audit.map(\.action)) == [.retry, .cancel, .delete, .pause, .resume, .redeliver], "\(audit.map(\.action))")
            #expect(audit.contains { $0.action == .retry && $0.isBulk && $0.done == 4 && $0.state == .done })
        }
    }

    @Test("Logs are one JSON object per line when standard error is not a terminal; LOG_FORMAT is checked")
    func jsonLogs() async throws {
        try await TestServices.withDatabase(migrated: false, callTimeout: LiveSystem.watching) { _, databaseURL in
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

    @Test("Tracing over gRPC is refused at start-up: this build exports OTLP over HTTP only")
    func tracingProtocol() throws {
        let environment = [
            "DATABASE_URL": "postgres://moments@127.0.0.1:1/moments", "REDIS_URL": "redis://127.0.0.1:1/0",
            "STORAGE_URL": "file:///tmp/moments-objects", "METRICS_PORT": "0",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        ]
        let run = try TestServices.moments(["worker"], environment: environment)
        #expect(run.status == 1 && run.err.contains("OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json"), "\(run.err)")
    }

    @Test(
        "Each role refuses a bad setting at start-up with a message naming the variable",
        arguments: [
            ("worker", "LOG_LEVEL", "loud"), ("worker", "WORKER_CONCURRENCY", "0"), ("worker", "JOB_RETENTION_DAYS", "7"),
            ("worker", "DELETE_SOURCE_AFTER_SUCCESS", "sometimes"), ("worker", "WEBHOOK_SECRET", "short"),
            ("worker", "METRICS_PORT", "99999"), ("api", "MAX_UPLOAD_BYTES", "lots"), ("api", "AUTH_REQUIRED", "perhaps"),
            ("api", "RATE_LIMIT_UPLOADS_PER_OWNER", "-1"), ("migrate", "DATABASE_URL", "mysql://db/moments"),
            ("worker", "REDIS_URL", "rediss://cache:6380"), ("worker", "STORAGE_URL", "ftp://files/moments"),
            ("worker", "OTEL_EXPORTER_OTLP_ENDPOINT", "otel-collector:4318"), ("api", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector"),
            ("worker", "APNS_KEY_ID", "KEY1234567"), ("worker", "APNS_KEY_FILE", "/nonexistent/AuthKey.p8"),
            ("api", "URL_SIGNING_SECRET", "short"), ("api", "PLAYBACK_URL_SECONDS", "5"),
        ])
    func badSettings(role: String, variable: String, value: String) throws {
        var environment = [
            "DATABASE_URL": "postgres://moments@127.0.0.1:1/moments", "REDIS_URL": "redis://127.0.0.1:1/0",
            "STORAGE_URL": "file:///tmp/moments-objects", "METRICS_PORT": "0",
        ]
        environment[variable] = value
        let started = ContinuousClock.now
        let run = try TestServices.moments([role], environment: environment)
        #expect(run.status != 0)
        #expect(run.err.contains(variable), "the refusal names \(variable): \(run.err)")
        #expect(ContinuousClock.now - started < .seconds(10), "refused at start-up, not after trying to connect")
    }
}
