import Foundation
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

/// The queries behind the console and the bulk controls, on planted rows whose answers follow
/// from how they were planted.
@Suite("Console queries: filters, cursors, charts, workers, bulk actions (real PostgreSQL)", .quiet)
struct ConsoleQueryTests {
    /// 30 jobs, one a second back from one instant taken before the first insert (however long
    /// the inserts take on a loaded machine): statuses cycle pending, failed, completed; owners a
    /// and b alternate; every fifth is named `party_N%.mov` (a literal % and _), the rest `clip-N.mov`.
    static func plant(_ store: JobStore) async throws -> [UUID] {
        let base = Date()
        var ids: [UUID] = []
        for index in 0..<30 {
            let id = UUID()
            let status = ["pending", "failed", "completed"][index % 3]
            let name = index % 5 == 0 ? "party_\(index)%.mov" : "clip-\(index).mov"
            try await store.client.query(
                """
                INSERT INTO jobs (id, owner, status, original_filename, source_key, target_duration, quality, error_code,
                                  created_at, started_at, completed_at, source_duration)
                VALUES (\(id), \(index % 2 == 0 ? "a" : "b"), \(status), \(name), \("sources/\(index)"), 30, 'high',
                        \(status == "failed" ? "corrupt_media" : nil as String?), \(base) - make_interval(secs => \(Double(index))),
                        CASE WHEN \(status) = 'pending' THEN NULL ELSE \(base) - make_interval(secs => \(Double(index) + 10)) END,
                        CASE WHEN \(status) = 'pending' THEN NULL ELSE \(base) - make_interval(secs => \(Double(index))) END,
                        60)
                """, logger: TestServices.logger)
            ids.append(id)
        }
        return ids
    }

    @Test("Each filter narrows the list, pages follow one another without gaps or repeats, and the count agrees")
    func filtersAndCursors() async throws {
        try await TestServices.withDatabase { store, _ in
            let ids = try await Self.plant(store)
            var seen: [UUID] = []
            var cursor: JobCursor?
            repeat {
                let page = try await store.listJobs(JobFilter(), after: cursor, limit: 7)
                seen += page.jobs.map(\.id)
                cursor = page.next
                if cursor != nil { #expect(page.jobs.count == 7) }
            } while cursor != nil
            #expect(seen == ids, "newest first, every job once")
            #expect(JobCursor(token: try #require(JobCursor(createdAt: Date(), id: ids[0]).token)) != nil)
            #expect(JobCursor(token: "garbage") == nil)

            func matching(_ filter: JobFilter) async throws -> [UUID] { try await store.listJobs(filter, limit: 100).jobs.map(\.id) }
            #expect(try await matching(JobFilter(statuses: [.failed])) == ids.enumerated().filter { $0.offset % 3 == 1 }.map(\.element))
            #expect(try await matching(JobFilter(errorCode: "corrupt_media")).count == 10)
            #expect(try await matching(JobFilter(owner: "a")) == ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
            #expect(try await matching(JobFilter(fileName: "PARTY_1")) == [ids[10], ids[15]], "case-insensitive, _ literal")
            #expect(try await matching(JobFilter(fileName: "0%")) == [ids[0], ids[10], ids[20]], "% literal")
            #expect(try await matching(JobFilter(fileName: "clip_")) == [], "_ is not a wildcard")
            let ten = try #require(try await store.job(ids[10])), twenty = try #require(try await store.job(ids[20]))
            #expect(try await matching(JobFilter(createdFrom: twenty.createdAt, createdBefore: ten.createdAt)) == Array(ids[11...20]))
            let both = JobFilter(statuses: [.pending, .completed], owner: "b")
            #expect(try await store.countJobs(both) == (try await matching(both)).count)
            #expect(try await store.countJobs(both) == 10)
            #expect(JobFilter(statuses: [.completed]).narrowed(to: OperatorAction.retry.applicableStatuses) == nil)
            #expect(JobFilter().narrowed(to: OperatorAction.cancel.applicableStatuses)?.statuses == [.pending, .processing])
            #expect(try await store.explainListJobs(JobFilter(statuses: [.failed])).contains("Index"), "served by an index")
        }
    }

    @Test("Throughput buckets count each ended job once, in the bucket of its end, with its processing time")
    func throughput() async throws {
        try await TestServices.withDatabase { store, _ in
            _ = try await Self.plant(store)
            let buckets = try await store.throughput(.day)
            #expect(buckets.count == ThroughputRange.day.buckets)
            #expect(buckets.reduce(0) { $0 + $1.completed } == 10 && buckets.reduce(0) { $0 + $1.failed } == 10)
            let p50 = buckets.compactMap(\.p50Seconds)
            #expect(!p50.isEmpty && p50.allSatisfy { abs($0 - 10) < 0.01 }, "planted 10 s of processing: \(p50)")
            #expect(buckets.compactMap(\.realTimeFactor).allSatisfy { abs($0 - 6) < 0.01 }, "60 s of source in 10 s")
            #expect(buckets.last.map { $0.start <= Date() && Date().timeIntervalSince($0.start) < 1800 } == true)
        }
    }

    @Test("The registry tells live, cleanly stopped and lost workers apart, with the jobs they hold")
    func registry() async throws {
        try await TestServices.withDatabase { store, _ in
            for name in ["live", "stopped", "lost"] {
                try await store.registerWorker(WorkerIdentity(id: name, host: "h", pid: 1, version: "1.0.0", concurrency: 2))
            }
            #expect(try await store.workerHeartbeat("live", running: 1, finished: 5))
            #expect(try await store.workerHeartbeat("unknown", running: 0, finished: 0) == false, "an unknown worker registers again")
            try await store.workerStopped("stopped", finished: 3)
            try await store.client.query(
                "UPDATE workers SET last_heartbeat_at = now() - interval '2 minutes' WHERE id = 'lost'",
                logger: TestServices.logger)
            let job = try await store.create(NewJob(sourceKey: "sources/x"))
            _ = try await store.claim(job.id, worker: "live", lease: .seconds(60))
            let workers = try await store.workers()
            #expect(workers.first?.id == "live", "live workers first")
            let byID = Dictionary(uniqueKeysWithValues: workers.map { ($0.id, $0) })
            #expect(byID["live"]?.state == "alive" && byID["live"]?.currentJobs == [job.id] && byID["live"]?.jobsFinished == 5)
            #expect(byID["stopped"]?.state == "stopped" && byID["lost"]?.state == "lost")
        }
    }

    @Test("A bulk action is claimed by one runner, taken over when its runner goes quiet, and stopped on request")
    func bulkClaims() async throws {
        try await TestServices.withDatabase { store, _ in
            _ = try await Self.plant(store)
            let operation = try await store.startBulk(
                actor: "console:Ann", action: .cancel, filter: JobFilter(statuses: [.pending]),
                matched: 10, runner: nil)
            let first = try #require(try await store.claimBulk(runner: "one", staleAfter: .seconds(30)))
            #expect(first.id == operation.id && first.filter == JobFilter(statuses: [.pending]))
            #expect(try await store.claimBulk(runner: "two", staleAfter: .seconds(30)) == nil, "held by a runner that reports")
            let batch = try await store.bulkBatch(first, limit: 4)
            #expect(batch.count == 4)
            let cursor = JobCursor(createdAt: batch[3].createdAt, id: batch[3].id)
            #expect(try await store.advanceBulk(first.id, runner: "one", cursor: cursor, done: 4, skipped: 0, failed: 0))
            try await store.client.query("UPDATE admin_operations SET heartbeat_at = now() - interval '1 minute'", logger: TestServices.logger)
            let taken = try #require(try await store.claimBulk(runner: "two", staleAfter: .seconds(30)))
            #expect(taken.cursor == cursor && taken.done == 4, "resumed where the first runner got to")
            #expect(try await store.bulkBatch(taken, limit: 100).count == 6, "the rest, none twice")
            #expect(try await store.advanceBulk(first.id, runner: "one", cursor: cursor, done: 1, skipped: 0, failed: 0) == false)
            #expect(try await store.stopBulk(taken.id, actor: "console:Bob"))
            #expect(try await store.advanceBulk(taken.id, runner: "two", cursor: cursor, done: 1, skipped: 0, failed: 0) == false)
            let stopped = try #require(try await store.operation(taken.id))
            #expect(stopped.state == .stopped && stopped.message?.contains("stopped by console:Bob") == true)
        }
    }
}
