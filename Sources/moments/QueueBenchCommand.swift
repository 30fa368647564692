import ArgumentParser
import Foundation
import JobQueue
import JobStore
import MomentsModel
import MomentsSupport
import Worker

extension QueueCommand {
    /// Measures the queue through the full path: a PostgreSQL row, a Redis entry, a worker's claim,
    /// completion and acknowledgement.
    struct Bench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measures enqueue-to-start latency and no-op jobs per second through the full path.", shouldDisplay: false)

        @Option(help: "Jobs for the latency phase (one at a time).") var latencyJobs = 300
        @Option(help: "Jobs for the throughput phase (all at once).") var throughputJobs = 3000
        @Option(help: "Worker slots taking jobs.") var consumers = 8
        @Option(help: "Tasks submitting jobs in the throughput phase.") var submitters = 8

        func run() async throws {
            try await reportingErrors {
                var environment = try await SettingsSources.load()
                let prefix = "moments-bench-\(UUID().uuidString.prefix(8).lowercased())"
                environment["MOMENTS_QUEUE_PREFIX"] = prefix
                let services = try await Services.fromEnvironment(label: "moments.bench", environment: environment)
                let owner = prefix
                try await services.run { services in
                    try await services.store.migrate()
                    let jobs = services.jobs
                    try await jobs.prepare()
                    let started = StartTimes()
                    let worker = QueueWorker(
                        configuration: WorkerConfiguration(
                            name: prefix, concurrency: consumers, pollBlock: .seconds(1),
                            reconcileInterval: .seconds(3600)),
                        jobs: jobs, handler: StartRecordingHandler(started: started),
                        logger: services.logger)
                    let workerTask = Task { await worker.run() }
                    defer { workerTask.cancel() }

                    // Latency: one job at a time, from the start of the submit (row, then queue) to the handler starting.
                    var latencies: [Double] = []
                    for _ in 0..<latencyJobs {
                        let id = UUID()
                        let sent = ContinuousClock.now
                        _ = try await jobs.submit(NewJob(id: id, owner: owner, sourceKey: "bench/\(id)"))
                        let start = await started.wait(for: id)
                        latencies.append((start - sent).inSeconds * 1000)
                        try await waitForCompletion(services.store, owner: owner, count: latencies.count)
                    }
                    latencies.sort()

                    // Throughput: create and enqueue many, wait until all are completed.
                    let clock = ContinuousClock.now
                    let perSubmitter = throughputJobs / submitters
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<submitters {
                            group.addTask {
                                for _ in 0..<perSubmitter {
                                    let id = UUID()
                                    _ = try await jobs.submit(NewJob(id: id, owner: owner, sourceKey: "bench/\(id)"))
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                    let submitted = (ContinuousClock.now - clock).inSeconds
                    try await waitForCompletion(services.store, owner: owner, count: latencyJobs + perSubmitter * submitters)
                    let elapsed = (ContinuousClock.now - clock).inSeconds
                    let total = perSubmitter * submitters

                    print(
                        "submit_to_start_ms p50=\(format(percentile(latencies, 0.50))) p99=\(format(percentile(latencies, 0.99))) "
                            + "max=\(format(latencies.last ?? 0)) (\(latencyJobs) jobs one at a time)")
                    print(
                        "full_path_jobs_per_second=\(format(Double(total) / elapsed)) (\(total) no-op jobs, \(submitters) submitters, "
                            + "\(consumers) worker slots, \(format(elapsed)) s; submitting alone \(format(Double(total) / submitted)) jobs/s)")
                    try await services.store.deleteJobs(owner: owner)
                    try await services.queue.destroy()
                }
            }
        }

        private func waitForCompletion(_ store: JobStore, owner: String, count: Int) async throws {
            while true {
                if try await store.countJobs(owner: owner, status: .completed) >= count { return }
                try await Task.sleep(for: .milliseconds(2))
            }
        }

        private func percentile(_ sorted: [Double], _ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }

        private func format(_ value: Double) -> String { String(format: "%.2f", value) }
    }
}

/// When each job's handler started, for latency.
actor StartTimes {
    private var times: [UUID: ContinuousClock.Instant] = [:]
    private var waiters: [UUID: CheckedContinuation<ContinuousClock.Instant, Never>] = [:]

    func record(_ id: UUID, at instant: ContinuousClock.Instant) {
        if let waiter = waiters.removeValue(forKey: id) { waiter.resume(returning: instant) } else { times[id] = instant }
    }

    func wait(for id: UUID) async -> ContinuousClock.Instant {
        if let time = times.removeValue(forKey: id) { return time }
        return await withCheckedContinuation { waiters[id] = $0 }
    }
}

struct StartRecordingHandler: JobHandler {
    let started: StartTimes

    func process(_ job: JobRecord, context: JobContext) async throws -> JobResult {
        await started.record(job.id, at: .now)
        return JobResult(resultKey: "bench/none", resultSize: 0)
    }
}
