import Foundation
import Logging
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Storage
import Testing

@testable import JobStore

/// Faults over HTTP against the running system (`moments api` and `moments worker` processes, real
/// PostgreSQL, Redis and SeaweedFS): the database restarting under load, storage failing and
/// stalling mid-job, a worker's disk filling up, and a worker frozen past its lease. Whatever
/// happens, every accepted job completes exactly once and its highlight is whole. `.alone`: three
/// processes, a second PostgreSQL and leases of seconds are all this machine should run at once.
@Suite("Faults over HTTP (real processes and servers)", .serialized, .alone)
struct FaultTests {
    typealias System = LiveSystem

    /// The highlight's length every upload of these tests asks for.
    static let target = 6.0

    /// Uploads the 20 s footage for a `target` highlight; the reply's status and job id (nil when refused).
    static func upload(_ base: String) throws -> (status: Int, id: UUID?, body: String) {
        let reply = try curl([
            "--max-time", "60", "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=\(Int(target))",
            "-F", "quality=low", "\(base)/api/v1/upload",
        ])
        return (reply.status, (try? CurlAPI.json(reply.body)["job_id"] as? String).flatMap { UUID(uuidString: $0) }, reply.body)
    }

    /// The job's events, and the highlight downloaded through the API with its duration.
    static func checkCompletedOnce(_ id: UUID, base: String, store: JobStore, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let events = try await store.events(id)
        #expect(events.filter { $0.to == .completed }.count == 1, "completed exactly once: \(events)", sourceLocation: sourceLocation)
        let highlight = try System.downloadedDuration(base, id: id)
        #expect(highlight.status == 200, sourceLocation: sourceLocation)
        #expect(abs(highlight.duration - target) <= 0.5, "the highlight is whole", sourceLocation: sourceLocation)
    }

    /// Uploads three jobs and waits until a worker is processing one of them: the moment a fault
    /// strikes mid-work.
    static func uploadThreeUntilOneProcesses(_ base: String, store: JobStore, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> [UUID]
    {
        var accepted: [UUID] = []
        for _ in 0..<3 {
            let reply = try upload(base)
            accepted.append(try #require(reply.id, "\(reply.status) \(reply.body)", sourceLocation: sourceLocation))
        }
        let working = try await TestServices.eventually(timeout: .seconds(60)) {
            for id in accepted where try await store.job(id)?.status == .processing { return true }
            return false
        }
        #expect(working, "a worker started on one of the jobs", sourceLocation: sourceLocation)
        return accepted
    }

    /// Waits until every job of `accepted` has completed, then checks each completed once, whole.
    static func checkEveryJobCompletesOnce(
        _ accepted: [UUID], base: String, store: JobStore,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let done = try await TestServices.eventually(timeout: .seconds(240)) {
            for id in accepted where (try? await store.job(id)?.status) != .completed { return false }
            return true
        }
        var statuses: [JobStatus?] = []
        for id in accepted { statuses.append(try? await store.job(id)?.status) }
        #expect(done, "every accepted job completed: \(statuses)", sourceLocation: sourceLocation)
        for id in accepted { try await checkCompletedOnce(id, base: base, store: store, sourceLocation: sourceLocation) }
    }

    /// A job store on `url`, running for the length of `body`.
    static func withStore<T: Sendable>(_ url: String, _ body: @Sendable (JobStore) async throws -> T) async throws -> T {
        let store = JobStore(configuration: try DatabaseConfiguration(url: url), logger: TestServices.logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            return try await body(store)
        }
    }

    @Test("PostgreSQL restarted while uploads and two workers run: 503 with the error shape meanwhile, then every job completes once")
    func postgresRestartUnderLoad() async throws {
        let postgres = try PrivatePostgres()
        defer { postgres.destroy() }
        try await System.withSystem(
            workers: 2, settings: ["WORKER_LEASE_SECONDS": "10", "WORKER_HEARTBEAT_SECONDS": "2"],
            databaseURL: postgres.url
        ) { base in
            try await Self.withStore(postgres.url) { store in
                // Mid-work: a job is being processed when the database goes away.
                var accepted = try await Self.uploadThreeUntilOneProcesses(base, store: store)
                try postgres.stop()
                let refused = try Self.upload(base)
                #expect(refused.status == 503, "\(refused.status) \(refused.body)")
                #expect((try? CurlAPI.error((refused.status, refused.body)).code) == "service_unavailable", "\(refused.body)")
                let polled = try curl(["--max-time", "30", "\(base)/api/v1/jobs/\(accepted[0])/status"])
                #expect(polled.status == 503 && (try? CurlAPI.error(polled).code) == "service_unavailable", "\(polled)")
                try await Task.sleep(for: .seconds(3))
                try postgres.start()
                // The client tries again, as the app does, and the API has recovered by itself.
                var retried: (status: Int, id: UUID?, body: String) = (0, nil, "")
                let back = try await TestServices.eventually(timeout: .seconds(30)) {
                    retried = try Self.upload(base)
                    return retried.status == 200
                }
                #expect(back, "uploads are accepted again: \(retried.status) \(retried.body)")
                if let id = retried.id { accepted.append(id) }
                try await Self.checkEveryJobCompletesOnce(accepted, base: base, store: store)
                let rows = try await store.client.query("SELECT count(*)::int FROM jobs")
                for try await count in rows.decode(Int.self) { #expect(count == accepted.count, "no job row without an accepted upload") }
            }
        }
    }

    @Test(
        "PostgreSQL frozen (SIGSTOP) while uploads and two workers run: every API call answers 503 within the database timeout; after SIGCONT every job completes once, with no restart"
    )
    func postgresFrozenUnderLoad() async throws {
        let postgres = try PrivatePostgres()
        defer { postgres.destroy() }
        try await System.withSystem(
            workers: 2, settings: ["WORKER_LEASE_SECONDS": "10", "WORKER_HEARTBEAT_SECONDS": "2"],
            databaseURL: postgres.url
        ) { base in
            try await Self.withStore(postgres.url) { store in
                let device = try CurlAPI.device(base)
                let accepted = try await Self.uploadThreeUntilOneProcesses(base, store: store)
                let frozenAt = ContinuousClock.now
                postgres.freeze()
                // Each call at once, as apps make them: an upload, a status poll (its own lane), an
                // authenticated read and a listing. Each ends in the store's 10 s, with the error shape.
                let calls: [(String, [String])] = [
                    ("upload", ["-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "\(base)/api/v1/upload"]),
                    ("status poll", ["\(base)/api/v1/jobs/\(accepted[0])/status"]),
                    ("GET /api/v1/me", device + ["\(base)/api/v1/me"]),
                    ("job history", device + ["\(base)/api/v1/jobs"]),
                ]
                try await withThrowingTaskGroup(of: (String, (status: Int, body: String), Duration).self) { group in
                    for (name, arguments) in calls {
                        group.addTask {
                            let started = ContinuousClock.now
                            let reply = try curl(["--max-time", "60"] + arguments)
                            return (name, (reply.status, reply.body), ContinuousClock.now - started)
                        }
                    }
                    for try await (name, reply, took) in group {
                        #expect(reply.status == 503 && (try? CurlAPI.error(reply).code) == "service_unavailable", "\(name): \(reply)")
                        #expect(took < .seconds(13), "\(name) answered after \(took)")
                    }
                }
                // Frozen past a lease and its takeover grace: the workers give up what they cannot renew.
                try await Task.sleep(until: frozenAt + .seconds(17))
                postgres.thaw()
                try await Self.checkEveryJobCompletesOnce(accepted, base: base, store: store)
                let me = try curl(["--max-time", "30"] + device + ["\(base)/api/v1/me"])
                #expect(me.status == 200, "the API answers again without a restart: \(me)")
            }
        }
    }

    @Test("Storage answers 503, 500 and silence mid-job: each request is tried again and the job completes once, in its first attempt")
    func storageFaultsMidJob() async throws {
        let upstream = try #require(URL(string: try TestServices.environment("S3_ENDPOINT"))?.port)
        let proxy = try FaultProxy(upstreamPort: upstream) { method, path, earlier in
            let sources = earlier.filter { $0.method == "GET" && $0.path.contains("/sources/") }.count
            let results = earlier.filter { $0.method == "PUT" && $0.path.contains("/results/") }.count
            switch (method, path) {
            case ("GET", _) where path.contains("/sources/"): return [.status(503), .silence][safe: sources] ?? .pass
            case ("PUT", _) where path.contains("/results/"): return [.status(500), .status(503)][safe: results] ?? .pass
            default: return .pass
            }
        }
        defer { proxy.close() }
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let environment = try System.environment(databaseURL: databaseURL)
            let (api, base) = try await System.startAPI(environment)  // the API reaches storage directly
            defer { api.stop() }
            let worker = try MomentsProcess(
                ["worker"],
                environment: environment.merging([
                    "S3_ENDPOINT": "http://127.0.0.1:\(proxy.port)", "S3_STALL_SECONDS": "2",
                ]) { $1 })
            defer { worker.stop() }
            let id = try #require(try Self.upload(base).id)
            let done = try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(id)?.status == .completed }
            let history = try await store.events(id)
            #expect(done, "\(history)")
            let events = try await store.events(id)
            #expect(events.map(\.to) == [.pending, .processing, .completed], "no attempt was lost to storage: \(events)")
            try await Self.checkCompletedOnce(id, base: base, store: store)
            let faults = proxy.exchanges.filter { $0.fault != .pass }.map(\.fault)
            #expect(faults == [.status(503), .silence, .status(500), .status(503)], "every planned fault happened: \(proxy.exchanges)")
            #expect(proxy.exchanges.contains { $0.method == "GET" && $0.path.contains("/sources/") && $0.fault == .pass })
        }
    }

    @Test(
        "A worker's disk fills up mid-render: the attempt fails with io_error and leaves nothing, and the retry completes once there is room",
        .enabled(if: getuid() == 0, "mounts a small tmpfs, which needs root (CI runs as root)"))
    func diskFull() async throws {
        let workFolder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-full-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: workFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workFolder) }
        // Room for the downloaded source and 16 KiB more: the render cannot be written.
        let sourceSize = try #require(try FileManager.default.attributesOfItem(atPath: TestFootage.twentySeconds)[.size] as? Int)
        let size = (sourceSize + (16 << 10) + 4095) / 4096 * 4096
        try TestServices.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", workFolder.path])
        defer { try? TestServices.run("/usr/bin/umount", ["-l", workFolder.path]) }
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let environment = try System.environment(databaseURL: databaseURL)
            let (api, base) = try await System.startAPI(environment)
            defer { api.stop() }
            let worker = try MomentsProcess(["worker"], environment: environment.merging(["WORK_DIR": workFolder.path]) { $1 })
            defer { worker.stop() }
            let id = try #require(try Self.upload(base).id)
            let failed = try await TestServices.eventually(timeout: .seconds(90)) {
                try await store.events(id).contains { $0.from == .processing && $0.to == .pending }
            }
            let history = try await store.events(id)
            try #require(failed, "the first attempt failed: \(history)")
            try TestServices.run("/usr/bin/mount", ["-o", "remount,size=256m", workFolder.path])
            let attempt = try #require(try await store.events(id).first { $0.from == .processing && $0.to == .pending })
            #expect(
                attempt.detail?.contains("io_error") == true && attempt.detail?.lowercased().contains("space") == true,
                "the failure names the full disk: \(attempt)")
            let storage = try StorageConfiguration.store(environment: Settings(ProcessInfo.processInfo.environment))
            #expect(
                try await storage.list(prefix: "results/\(id.uuidString.lowercased())", after: nil, limit: 10).isEmpty,
                "no partial result was stored")
            let done = try await TestServices.eventually(timeout: .seconds(90)) { try await store.job(id)?.status == .completed }
            let retried = try await store.events(id)
            #expect(done, "\(retried)")
            try await Self.checkCompletedOnce(id, base: base, store: store)
            let stored = try await storage.list(prefix: "results/\(id.uuidString.lowercased())", after: nil, limit: 10).map(\.key).sorted()
            #expect(
                stored.count == 3 && stored.filter { $0.hasSuffix(".mp4") }.count == 1 && Set(stored.map { $0.prefix(39) }).count == 1,
                "one attempt's highlight, poster and thumbnails: \(stored)")
            let left = try await TestServices.eventually(timeout: .seconds(10)) {
                try FileManager.default.contentsOfDirectory(atPath: workFolder.path).isEmpty
            }
            let contents = try FileManager.default.contentsOfDirectory(atPath: workFolder.path)
            #expect(left, "the work folder is empty again: \(contents)")
        }
    }

    @Test(
        "A worker frozen (SIGSTOP) past its lease: another takes the job over; when the frozen one wakes, the job stays completed once and its highlight intact"
    )
    func frozenWorker() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let environment = try System.environment(databaseURL: databaseURL, ["WORKER_LEASE_SECONDS": "5", "WORKER_HEARTBEAT_SECONDS": "1"])
            let (api, base) = try await System.startAPI(environment)
            defer { api.stop() }
            let frozen = try MomentsProcess(["worker"], environment: environment)
            defer { frozen.stop() }
            let id = try await System.uploadAndWaitUntilMidJob(base, store: store)
            frozen.send(SIGSTOP)
            let survivor = try MomentsProcess(["worker"], environment: environment)
            defer { survivor.stop() }
            let done = try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(id)?.status == .completed }
            let history = try await store.events(id)
            #expect(done, "\(history)")
            let resultKey = try #require(try await store.job(id)?.resultKey)
            frozen.send(SIGCONT)
            // The woken worker finds its lease gone within a renewal or two; give it time to act on that.
            try await Task.sleep(for: .seconds(6))
            #expect(frozen.isRunning, "the woken worker carries on with other work")
            let events = try await store.events(id)
            #expect(events.map(\.to) == [.pending, .processing, .processing, .completed], "\(events)")
            #expect(try await store.job(id)?.resultKey == resultKey)
            let highlight = try System.downloadedDuration(base, id: id)
            #expect(highlight.status == 200)
            #expect(abs(highlight.duration - 15) <= 0.5, "the highlight is intact (uploadAndWaitUntilMidJob asks for 15 s)")
        }
    }

}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
