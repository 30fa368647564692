import Foundation
import JobStore
import MediaSynth
import MomentsModel
import MomentsSupport
import ServiceTestSupport
import Testing

/// Each attempt's engine runs in a child process of its worker (`moments engine`): what happens to
/// that process, through the running system (`moments api` and `moments worker` processes, real
/// PostgreSQL, Redis and SeaweedFS). An engine that dies fails its attempt alone; one past its
/// memory limit ends `out_of_memory`; none outlives its worker or its cancelled job.
@Suite("The engine in a child process (real processes and servers)", .serialized, .alone)
struct EngineIsolationTests {
    typealias System = LiveSystem

    static func upload(_ base: String, _ file: String = TestFootage.twentySeconds, target: Int = 6) throws -> UUID {
        let reply = try curl([
            "--max-time", "60", "-F", "file=@\(file);type=video/mp4", "-F", "target_duration=\(target)",
            "-F", "quality=low", "\(base)/api/v1/upload",
        ])
        guard let id = UUID(uuidString: (try? CurlAPI.json(reply.body)["job_id"] as? String) ?? "") else {
            throw TestFailure("the upload was refused: \(reply.status) \(reply.body)")
        }
        return id
    }

    /// The engine process of job `id` once its worker has started it.
    static func engine(of id: UUID, in worker: MomentsProcess) async throws -> pid_t {
        var found: pid_t?
        _ = try await TestServices.eventually(timeout: .seconds(90)) {
            found = worker.engineChild(workingOn: id)
            return found != nil
        }
        guard let found else { throw TestFailure("no engine process of job \(id) within 90 s") }
        return found
    }

    /// The API and one `moments worker` on a fresh database.
    struct Running: Sendable {
        let store: JobStore
        let databaseURL: String
        let api: MomentsProcess
        let base: String
        let worker: MomentsProcess
    }

    /// The API and one `moments worker` with `settings` on a fresh database, for the length of
    /// `body`; with `together`, `moments dev`: both in one process, as a newcomer runs them.
    static func withWorker(
        _ settings: [String: String] = [:], together: Bool = false,
        _ body: @Sendable (Running) async throws -> Void
    ) async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let environment = try System.environment(databaseURL: databaseURL, settings)
            let (api, base) = try await System.startAPI(environment, command: together ? "dev" : "api")
            defer { api.stop() }
            let worker = together ? api : try MomentsProcess(["worker"], environment: environment)
            defer { worker.stop() }
            try await body(Running(store: store, databaseURL: databaseURL, api: api, base: base, worker: worker))
        }
    }

    static func isGone(_ pid: pid_t) -> Bool { LinuxProcess(pid).isGone }

    /// SIGSEGV under `moments dev` (the API in the worker's own process), SIGKILL with the API apart.
    @Test(
        "An engine killed mid-job fails its attempt engine_crashed; the retry completes; the job beside it and the API carry on",
        arguments: [(SIGSEGV, true), (SIGKILL, false)])
    func killedEngine(signal: Int32, together: Bool) async throws {
        try await Self.withWorker(["WORKER_CONCURRENCY": "2"], together: together) { system in
            let (store, base, worker) = (system.store, system.base, system.worker)
            let victim = try Self.upload(base), bystander = try Self.upload(base)
            let engine = try await Self.engine(of: victim, in: worker)
            _ = try await Self.engine(of: bystander, in: worker)
            kill(engine, signal)
            // The API answers throughout; both jobs complete.
            var healthy = 0
            let done = try await TestServices.eventually(timeout: .seconds(180)) {
                if try curl(["--max-time", "5", "\(base)/health"]).status == 200 { healthy += 1 }
                let (a, b) = (try await store.job(victim)?.status, try await store.job(bystander)?.status)
                return a == .completed && b == .completed
            }
            let history = try await store.events(victim)
            #expect(done, "\(history)")
            #expect(healthy > 0 && system.api.isRunning && worker.isRunning)
            // The victim: its first attempt failed engine_crashed, naming the signal; the second completed.
            #expect(history.map(\.to) == [.pending, .processing, .pending, .processing, .completed], "\(history)")
            let failed = try #require(history.first { $0.from == .processing && $0.to == .pending })
            #expect(failed.attempt == 1 && failed.detail?.hasPrefix("engine_crashed: ") == true, "\(failed)")
            let name = signal == SIGSEGV ? "SIGSEGV" : "SIGKILL"
            #expect(failed.diagnostics?.contains("killed by \(name)") == true, "\(failed.diagnostics ?? "no diagnostics")")
            // The job beside it: one attempt, untouched.
            #expect(try await store.events(bystander).map(\.to) == [.pending, .processing, .completed])
            for id in [victim, bystander] { #expect(try System.downloadedDuration(base, id: id).status == 200) }
            // What an operator reads.
            let shown = try captured(
                TestServices.momentsBinary.path, ["jobs", "show", victim.uuidString],
                environment: ["DATABASE_URL": system.databaseURL])
            let text = String(decoding: shown.output, as: UTF8.self)
            #expect(text.contains("attempt 1: engine process") && text.contains("killed by \(name)"), "\(text)")
        }
    }

    /// 8K: one decoded picture is 50 MB, and decoding needs it with its references, so no way
    /// through fits in 64 MB beyond the engine's start (the small footage needs about 40 MB; a 4K
    /// picture is small enough that, with its threads refused, the engine sometimes fits).
    static let large: String = {
        var video = SyntheticVideo(width: 7680, height: 4320, frameRate: 5, scenes: [.init(frames: 7, camera: .still)])
        video.audio = nil
        video.gopSize = 5
        video.encoderOptions = ["preset": "ultrafast"]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-8k-\(UUID().uuidString).mp4").path
        try? video.write(to: path)
        return path
    }()

    @Test("A video past the memory limit ends out_of_memory after its attempts, saying so; the worker carries on with the next")
    func pastTheMemoryLimit() async throws {
        try await Self.withWorker(["WORKER_ATTEMPT_MEMORY_MB": "64"]) { system in
            let (store, base, worker) = (system.store, system.base, system.worker)
            let large = try Self.upload(base, Self.large)
            let ended = try await TestServices.eventually(timeout: .seconds(240)) { try await store.job(large)?.status.isTerminal == true }
            let job = try #require(try await store.job(large))
            let history = try await store.events(large)
            #expect(ended && job.status == .failed, "\(history)")
            #expect(job.errorCode == ErrorCode.outOfMemory.rawValue, "\(job.errorCode ?? "none"): \(job.errorMessage ?? "")")
            #expect(job.message?.contains("needs more memory than our workers have") == true, "\(job.message ?? "")")
            let failures = try await store.events(large).filter { $0.from == .processing }
            #expect(failures.count == job.maxAttempts && failures.allSatisfy { $0.detail?.hasPrefix("out_of_memory: ") == true }, "\(failures)")
            #expect(worker.isRunning)
            // The same worker, the same limit: a video that fits completes.
            let small = try Self.upload(base)
            let done = try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(small)?.status == .completed }
            let smallHistory = try await store.events(small)
            #expect(done, "\(smallHistory)")
        }
    }

    @Test("A worker keeps an engine process ready; one killed while it waits is replaced and the job completes in its first attempt")
    func spareEngine() async throws {
        try await Self.withWorker { system in
            let (store, base, worker) = (system.store, system.base, system.worker)
            var spares: [pid_t] = []
            let ready = try await TestServices.eventually(timeout: .seconds(30)) {
                spares = worker.engineChildren
                return spares.count == 1
            }
            try #require(ready, "the worker keeps one engine ready (WORKER_CONCURRENCY=1): \(spares)")
            kill(spares[0], SIGKILL)
            let id = try Self.upload(base)
            let done = try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(id)?.status == .completed }
            let history = try await store.events(id)
            #expect(
                done && history.map(\.to) == [.pending, .processing, .completed],
                "\(history.map { "\($0.to) \($0.detail ?? "") \($0.diagnostics ?? "")" })")
        }
    }

    @Test("No engine outlives its worker killed with SIGKILL, nor its job cancelled mid-run")
    func noOrphans() async throws {
        try await Self.withWorker { system in
            let (store, base, worker) = (system.store, system.base, system.worker)
            // Cancelled: SIGTERM, and the engine stops within a second or two.
            let cancelled = try Self.upload(base)
            let first = try await Self.engine(of: cancelled, in: worker)
            #expect(try curl(["-X", "DELETE", "\(base)/api/v1/jobs/\(cancelled)"]).status == 200)
            let stopped = try await TestServices.eventually(timeout: .seconds(5)) { Self.isGone(first) }
            #expect(stopped, "the cancelled job's engine \(first) still runs: \(LinuxProcess(first).commandLine)")
            #expect(try await store.job(cancelled)?.status == .cancelled)
            // The worker killed outright: its engine sees its standard input end and exits.
            let orphaned = try Self.upload(base)
            let second = try await Self.engine(of: orphaned, in: worker)
            worker.send(SIGKILL)
            let gone = try await TestServices.eventually(timeout: .seconds(3)) { Self.isGone(second) }
            #expect(gone, "the engine \(second) outlived its worker: \(LinuxProcess(second).commandLine)")
        }
    }
}
