import Foundation
import ServiceTestSupport
import Testing

@testable import JobStore

@Suite("Migrations (real PostgreSQL)", .quiet)
struct MigrationTests {
    @Test("From an empty database every migration applies once; applying again changes nothing and keeps the data")
    func fromEmptyAndAgain() async throws {
        try await TestServices.withDatabase(migrated: false) { store, _ in
            let versions = Migrations.all.map(\.version)
            #expect(try await store.migrate() == versions)
            let job = try await store.create(NewJob(sourceKey: "sources/a.mp4"))
            #expect(try await store.migrate() == [])
            #expect(try await store.appliedMigrations() == versions)
            #expect(try await store.job(job.id)?.sourceKey == "sources/a.mp4")
        }
    }

    @Test("Processes migrating at once take turns under the advisory lock: each version applies exactly once")
    func concurrentStartUp() async throws {
        try await TestServices.withDatabase(migrated: false) { store, _ in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<6 { group.addTask { try await store.migrate() } }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(applied.sorted() == Migrations.all.map(\.version))
            #expect(try await one(store, "SELECT count(*) FROM schema_migrations", as: Int.self) == Migrations.all.count)
        }
    }

    @Test("The schema rejects what the CHECK constraints forbid")
    func constraints() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = try await store.create(NewJob(sourceKey: "sources/b.mp4"))
            for statement in [
                "UPDATE jobs SET status = 'exploded' WHERE id = '\(job.id)'",
                "UPDATE jobs SET progress = 101 WHERE id = '\(job.id)'",
                "UPDATE jobs SET quality = 'ultra' WHERE id = '\(job.id)'",
                // processing needs a lease owner and expiry
                "UPDATE jobs SET status = 'processing' WHERE id = '\(job.id)'",
            ] {
                await #expect(throws: (any Error).self, "\(statement)") {
                    try await store.client.query(.init(unsafeSQL: statement))
                }
            }
        }
    }
}
