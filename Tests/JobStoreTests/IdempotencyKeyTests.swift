import Foundation
import MomentsModel
import PostgresNIO
import ServiceTestSupport
import Testing

@testable import JobStore

@Suite("Idempotency keys and a resubmitted job's quota (real PostgreSQL)", .quiet)
struct IdempotencyKeyTests {
    @Test("A key is claimed once per owner: later claims answer the first record until it is a day old, then it is replaced and swept")
    func claims() async throws {
        try await TestServices.withDatabase { store, _ in
            let first = UUID(), second = UUID()
            let claimed = try await store.claimIdempotencyKey(owner: "anna", key: "k1", endpoint: "upload", fingerprint: "f1", jobID: first)
            #expect(claimed.jobID == first && claimed.fingerprint == "f1")
            let again = try await store.claimIdempotencyKey(owner: "anna", key: "k1", endpoint: "upload", fingerprint: "f2", jobID: second)
            #expect(again.jobID == first && again.fingerprint == "f1", "the first request's record, for the caller to compare")
            let other = try await store.claimIdempotencyKey(owner: "ben", key: "k1", endpoint: "upload", fingerprint: "f2", jobID: second)
            #expect(other.jobID == second, "keys are per owner")
            let anonymous = try await store.claimIdempotencyKey(owner: nil, key: "k1", endpoint: "uploads", fingerprint: "f3", jobID: UUID())
            #expect(anonymous.endpoint == "uploads")
            #expect(try await store.idempotencyKey(owner: nil, key: "k1")?.jobID == anonymous.jobID)

            // A day later the key is free again, and the sweep deletes what nobody reclaimed.
            try await store.client.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'", logger: TestServices.logger)
            #expect(try await store.idempotencyKey(owner: "anna", key: "k1") == nil)
            let renewed = try await store.claimIdempotencyKey(owner: "anna", key: "k1", endpoint: "upload", fingerprint: "f9", jobID: second)
            #expect(renewed.jobID == second && renewed.fingerprint == "f9")
            #expect(try await store.deleteExpiredIdempotencyKeys() == 2, "ben's and the anonymous key; anna's was renewed")
            #expect(try await store.idempotencyKey(owner: "anna", key: "k1")?.jobID == second)
        }
    }

    @Test("The same job submitted again spends nothing, even when it took the owner's last highlight")
    func resubmissionIsFree() async throws {
        try await TestServices.withDatabase { store, _ in
            let job = NewJob(owner: "anna", sourceKey: "sources/a.mp4")
            guard case .created = try await store.create(job, monthlyLimit: 1) else { Issue.record("the first is created"); return }
            guard case .created(let again) = try await store.create(job, monthlyLimit: 1) else { Issue.record("the same job is no new one"); return }
            #expect(again.id == job.id)
            guard
                case .quotaExceeded(let used, let limit) = try await store.create(
                    NewJob(owner: "anna", sourceKey: "sources/b.mp4"),
                    monthlyLimit: 1)
            else {
                Issue.record("a new job is over the limit"); return
            }
            #expect(used == 1 && limit == 1)
        }
    }

    @Test("An owner's jobs page newest first; anonymous jobs are their own owner's")
    func ownJobs() async throws {
        try await TestServices.withDatabase { store, _ in
            for index in 0..<7 { _ = try await store.create(NewJob(owner: "anna", sourceKey: "sources/a\(index).mp4")) }
            for index in 0..<3 { _ = try await store.create(NewJob(sourceKey: "sources/n\(index).mp4")) }
            let first = try await store.ownJobs(owner: "anna", limit: 4)
            let second = try await store.ownJobs(owner: "anna", after: first.next, limit: 4)
            #expect(first.jobs.count == 4 && first.next != nil && second.jobs.count == 3 && second.next == nil)
            #expect(Set((first.jobs + second.jobs).map(\.id)).count == 7)
            let anonymous = try await store.ownJobs(owner: nil, limit: 100)
            #expect(anonymous.jobs.count == 3 && anonymous.jobs.allSatisfy { $0.owner == nil })
            #expect(try await store.ownJobs(owner: "anna", statuses: [.completed]).jobs.isEmpty)
        }
    }
}
