import Foundation
import MomentsContract
import MomentsKit
import MomentsModel
import MomentsSupport
import PostgresNIO
import ServiceTestSupport
import Storage
import Testing

@testable import JobStore

/// Erasing at the owner's request (API 1.2) through real processes: `moments api` and a worker,
/// PostgreSQL, Redis and SeaweedFS, driven by curl and MomentsKit; the objects checked in storage
/// itself and the audit log in the database.
@Suite("Erasure (real processes and servers)", .serialized, .heavy)
struct ErasureTests {
    @Test("A job's files erased and a device erased with everything of it: idempotent, audited, downloads 410 erased, the token revoked")
    func eraseJobAndDevice() async throws {
        let storage = try StorageConfiguration.store(environment: Settings(ProcessInfo.processInfo.environment))
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await LiveSystem.withRunningSystem(workers: 0, settings: ["AUTH_REQUIRED": "true"], databaseURL: databaseURL) { system in
                let base = system.base
                var client = MomentsClient(baseURL: URL(string: base)!)
                let registration = try await client.registerDevice(name: "Ann's iPhone")
                client.token = registration.token
                let ann = ["-H", "Authorization: Bearer \(registration.token)"]
                let bob = try CurlAPI.device(base, name: "Bob")

                // A completed job, with the app's metadata.
                let done = try await client.upload(
                    file: URL(fileURLWithPath: TestFootage.twentySeconds), targetDuration: 5, quality: .low, metadata: ["album": "Ann"]
                ).jobID
                try system.startWorker()
                #expect(try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(done)?.status == .completed })
                let before = try #require(try await store.job(done))
                let keys = before.storedObjectKeys
                #expect(keys.count == 3 && before.posterKey != nil && before.thumbnailsKey != nil, "highlight, poster, thumbnails: \(keys)")
                for key in keys { #expect(try await storage.head(key: key).size > 0, "\(key) is stored") }
                let link = try await client.playback(of: done).playbackURL
                #expect(try curl(["-r", "0-99", link]).status == 206)

                // Another device cannot erase it.
                let path = "\(base)/api/v1/jobs/\(done.uuidString.lowercased())"
                let stranger = try CurlAPI.error(try curl(["-X", "DELETE"] + bob + ["\(path)/files"]))
                #expect(stranger.status == 404 && stranger.code == "job_not_found")

                // Its owner erases it: the row stays, marked and cleared; the files are gone from storage.
                let erased = try await client.erase(done)
                let erasedAt = try #require(erased.erasedAt)
                #expect(erased.report.status == .completed && erased.report.originalFilename == nil && erased.report.metadata == nil)
                #expect(erased.segments == nil && erased.playback == nil, "\(erased)")
                for key in keys {
                    await #expect(throws: StorageError.self, "\(key) is deleted") { try await storage.head(key: key) }
                }
                for file in ["download", "poster", "thumbnails", "timeline?format=edl"] {
                    let gone = try CurlAPI.error(try curl(ann + ["\(path)/\(file)"]))
                    #expect(gone.status == 410 && gone.code == "erased", "\(file): \(gone)")
                }
                #expect(try curl([link]).status != 200, "the old playback link plays nothing")
                // Again: the same, nothing new.
                let again = try await client.erase(done)
                #expect(again.erasedAt == erasedAt && again.report.status == .completed)
                let audit = try await store.operations(job: done)
                #expect(
                    audit.count == 2
                        && audit.allSatisfy { $0.action == .erase && $0.actor == "device:\(registration.deviceID.uuidString.lowercased())" })

                // A job that has not run yet: the queue is paused, so it waits.
                let pause = try TestServices.moments(["queue", "pause"], environment: system.environment)
                #expect(pause.status == 0, "\(pause.err)")
                let waiting = try await client.upload(file: URL(fileURLWithPath: TestFootage.twentySeconds), targetDuration: 5).jobID
                let source = try #require(try await store.job(waiting)?.sourceKey)
                #expect(try await storage.head(key: source).size > 0)

                // The device erases itself: the waiting job is cancelled and erased, the token revoked.
                let first = try await client.eraseDevice()
                #expect(first.deviceID == registration.deviceID && first.jobsErased == 1, "\(first)")
                let cancelled = try #require(try await store.job(waiting))
                #expect(cancelled.status == .cancelled && cancelled.erasedAt != nil && cancelled.resultExpiredAt != nil)
                await #expect(throws: StorageError.self, "the waiting job's source is deleted") { try await storage.head(key: source) }
                let refused = await #expect(throws: MomentsClientError.self) { try await client.account() }
                #expect(refused?.status == 401 && refused?.code == "invalid_token")
                let upload = try CurlAPI.error(try curl(ann + ["-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "\(base)/api/v1/upload"]))
                #expect(upload.status == 401 && upload.code == "invalid_token")
                // Asked again with the same token: the same erasure, nothing left to do.
                let second = try await client.eraseDevice()
                #expect(second.erasedAt == first.erasedAt && second.jobsErased == 0)
                let rows = try await store.client.query(
                    "SELECT name IS NULL, revoked_at IS NOT NULL FROM devices WHERE id = \(registration.deviceID)", logger: TestServices.logger)
                var device: [(Bool, Bool)] = []
                for try await row in rows.decode((Bool, Bool).self) { device.append(row) }
                #expect(device.count == 1 && device[0] == (true, true), "the name cleared, the token revoked")
                let erasures = try await store.operations(limit: 20).filter { $0.action == .eraseDevice }
                #expect(erasures.count == 2, "each request audited")
                // Bob's token still works: erasing is per device.
                #expect(try curl(bob + ["\(base)/api/v1/me"]).status == 200)
            }
        }
    }
}
