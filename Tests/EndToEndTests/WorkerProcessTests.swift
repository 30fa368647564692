import Foundation
import JobQueue
import Jobs
import MomentsModel
import ServiceTestSupport
import Testing

@testable import JobStore

/// Worker processes (`moments queue drill-worker`) against real PostgreSQL and Redis, killed for real.
@Suite("Worker processes (real PostgreSQL and Redis)", .quiet)
struct WorkerProcessTests {
    @Test("A worker process killed with SIGKILL mid-job: the job is redelivered after the lease, not before, and completes once")
    func sigkillMidJob() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await TestServices.withQueue(database: 8) { queue in
                let environment = [
                    "DATABASE_URL": databaseURL, "REDIS_URL": try TestServices.redisURL(database: 8),
                    "MOMENTS_QUEUE_PREFIX": String(queue.keys.stream.dropLast(":jobs".count)), "LOG_LEVEL": "warning",
                ]
                let arguments = [
                    "queue", "drill-worker", "--job-ms", "4000", "--concurrency", "1", "--lease-ms", "2000",
                    "--heartbeat-ms", "500", "--takeover-grace-ms", "300", "--reconcile-ms", "500",
                ]
                let id = try await TestServices.submitJobs(store, queue)[0]
                let doomed = try DrillProcess(arguments: arguments + ["--name", "doomed"], environment: environment)
                #expect(
                    try await TestServices.eventually {
                        try await store.job(id).map { $0.status == .processing && $0.progress >= 20 } ?? false
                    }, "the first worker is mid-job")
                doomed.kill()
                let leaseEnd = try #require(try await store.job(id)?.leaseExpiresAt)
                let survivor = try DrillProcess(arguments: arguments + ["--name", "survivor"], environment: environment)
                defer { survivor.kill() }
                #expect(try await TestServices.eventually(timeout: .seconds(30)) { try await store.job(id)?.status == .completed })
                let events = try await store.events(id)
                try #require(events.map(\.to) == [.pending, .processing, .processing, .completed], "\(events)")
                #expect(events[1].worker == "doomed" && events[2].worker == "survivor" && events[3].worker == "survivor")
                #expect(events[2].at >= leaseEnd, "taken over at \(events[2].at), lease ran to \(leaseEnd)")
                #expect(events.filter { $0.to == .completed }.count == 1)
            }
        }
    }
}

/// `moments queue drill-worker` as a separate process, so it can be killed for real.
final class DrillProcess: @unchecked Sendable {
    private let process: Process

    init(arguments: [String], environment: [String: String]) throws {
        process = try Process.launched { process in
            process.executableURL = TestServices.momentsBinary
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
        }
    }

    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
    }

    deinit { kill() }
}
