import ArgumentParser
import Dispatch
import Foundation
import JobQueue
import JobStore
import Jobs
import Worker

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Looks at and repairs the job queue.",
        subcommands: [Stats.self, Pause.self, Resume.self, Workers.self, Reconcile.self, DrillWorker.self, DrillSubmit.self, Bench.self])

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Prints queue depth, oldest waiting age, in-flight and dead-letter counts.")

        @Flag(help: "Print JSON instead of text.") var json = false

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.queue")
                let (stats, counts) = try await services.run { services in
                    (try await services.jobs.stats(), try await services.store.countsByStatus())
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(stats), as: UTF8.self))
                } else {
                    print(
                        "ready \(stats.ready), delayed \(stats.delayed), in flight \(stats.inFlight), dead-lettered \(stats.deadLettered), "
                            + "oldest ready \(String(format: "%.1f", stats.oldestReadySeconds)) s, consumers \(stats.consumers)"
                            + (stats.paused ? ", PAUSED" : ""))
                    print(
                        "jobs: "
                            + counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))
                }
            }
        }
    }

    struct Workers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lists the workers heard from in the last day: alive, stopped cleanly, or lost (heartbeats stopped).")

        @Flag(help: "Print JSON instead of a table.") var json = false

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.queue")
                let workers = try await services.run { services in try await services.store.workers() }
                let now = Date()
                if json {
                    let rows: [[String: Any]] = workers.map { worker in
                        [
                            "id": worker.id, "state": worker.state, "host": worker.host, "pid": worker.pid, "version": worker.version,
                            "concurrency": worker.concurrency, "running": worker.running, "jobs_finished": worker.jobsFinished,
                            "started_at": worker.startedAt.formatted(.iso8601), "last_heartbeat_at": worker.lastHeartbeatAt.formatted(.iso8601),
                            "current_jobs": worker.currentJobs.map { $0.uuidString.lowercased() },
                        ]
                    }
                    print(String(decoding: try JSONSerialization.data(withJSONObject: rows, options: [.sortedKeys]), as: UTF8.self))
                    return
                }
                print(
                    JobsCommand.table(
                        ["worker", "state", "version", "concurrency", "running", "finished", "last heartbeat", "jobs"],
                        workers.map { worker in
                            [
                                worker.id, worker.state, worker.version, "\(worker.concurrency)", "\(worker.running)", "\(worker.jobsFinished)",
                                "\(Int(now.timeIntervalSince(worker.lastHeartbeatAt)))s ago",
                                worker.currentJobs.map { String($0.uuidString.lowercased().prefix(8)) }.joined(separator: " "),
                            ]
                        }))
                if workers.isEmpty { print("(no worker in the last day)") }
            }
        }
    }

    struct Reconcile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Runs one reconciler pass now: puts back jobs Redis lost and recovers lapsed leases.")

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.reconcile")
                let report = try await services.run { services in
                    try await services.jobs.reconcile(quiet: .zero)
                }
                print(report.map(\.description) ?? "another process is reconciling right now")
            }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pauses the queue: workers finish what they run and take nothing new; uploads still queue up.")

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.queue")
                try await services.run { services in try await services.controls.pause() }
                print("queue paused: workers take no new jobs until `moments queue resume`")
            }
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resumes a paused queue: workers take jobs again.")

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.queue")
                try await services.run { services in try await services.controls.resume() }
                print("queue resumed")
            }
        }
    }

    /// A worker whose jobs only sleep: for tests, the fault demonstration and the benchmark.
    struct DrillWorker: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "drill-worker", abstract: "Runs a worker whose jobs sleep (tests and fault drills).", shouldDisplay: false)

        @Option(help: "How long each job works, in milliseconds.") var jobMs = 500
        @Option(help: "Jobs at once.") var concurrency = 2
        @Option(help: "Lease in milliseconds.") var leaseMs = 60_000
        @Option(help: "Heartbeat interval in milliseconds.") var heartbeatMs = 10_000
        @Option(help: "Extra idle time before a lapsed delivery is taken over, in milliseconds.") var takeoverGraceMs = 5_000
        @Option(help: "First retry delay in milliseconds.") var retryBaseMs = 5_000
        @Option(help: "Reconciler interval in milliseconds.") var reconcileMs = 15_000
        @Option(help: "Pending jobs untouched this long are restored by the reconciler, in milliseconds.") var reconcileQuietMs = 10_000
        @Option(help: "Fraction of attempts that fail with a retryable error.") var failRate = 0.0
        @Option(help: "Worker name (default: host-pid-random).") var name: String?

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.worker")
                let configuration = WorkerConfiguration(
                    name: name ?? WorkerConfiguration.defaultName(), concurrency: concurrency, lease: .milliseconds(leaseMs),
                    heartbeat: .milliseconds(heartbeatMs), cancelCheck: .milliseconds(min(1000, heartbeatMs)),
                    takeoverGrace: .milliseconds(takeoverGraceMs), retryBase: .milliseconds(retryBaseMs),
                    pollBlock: .seconds(1), reconcileInterval: .milliseconds(reconcileMs),
                    reconcileQuiet: .milliseconds(reconcileQuietMs))
                let handler = SleepingJobHandler(duration: .milliseconds(jobMs), failRate: failRate)
                // Drills run several workers on one machine: no metrics port unless one is asked for.
                var environment = try await SettingsSources.load()
                if environment["METRICS_PORT"] == nil { environment["METRICS_PORT"] = "0" }
                try await services.runWorker(configuration, handler: handler, environment: environment)
            }
        }
    }

    struct DrillSubmit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "drill-submit", abstract: "Creates and enqueues sleeping jobs (tests and fault drills).", shouldDisplay: false)

        @Option(help: "How many jobs.") var count = 10
        @Option(help: "Attempts each job may take.") var maxAttempts = 3
        @Option(help: "Owner recorded on the jobs.") var owner = "drill"
        @Option(help: "Leave every Nth job out of Redis, as if the push after the INSERT were lost (0: none).") var dropEnqueueEvery = 0

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.submit")
                let ids = try await services.run { services in
                    try await services.store.migrate()
                    try await services.jobs.prepare()
                    var ids: [UUID] = []
                    for index in 0..<count {
                        let id = UUID()
                        let job = NewJob(
                            id: id, owner: owner, originalFilename: "drill-\(index).mp4",
                            sourceKey: "drill/\(id.uuidString.lowercased()).mp4", maxAttempts: maxAttempts)
                        if dropEnqueueEvery > 0 && (index + 1) % dropEnqueueEvery == 0 {
                            try await services.store.create(job)  // the row only: the push after it "lost"
                        } else {
                            _ = try await services.jobs.submit(job)
                        }
                        ids.append(id)
                    }
                    return ids
                }
                for id in ids { print(id.uuidString.lowercased()) }
            }
        }
    }
}

/// Sleeps for its duration in ten steps, reporting progress; fails a share of attempts on purpose.
struct SleepingJobHandler: JobHandler {
    var duration: Duration
    var failRate: Double

    func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        for step in 0..<10 {
            await context.progress(step * 10, stage: "working", message: "Working (\(step * 10) %)")
            try await Task.sleep(for: duration / 10)
        }
        if failRate > 0, Double.random(in: 0..<1) < failRate {
            throw JobFailure(code: "drill_failure", message: "A failure planted by the drill.", retryable: true)
        }
        return JobResult(resultKey: "drill/\(job.id.uuidString.lowercased())-result.mp4", resultSize: 0)
    }
}
