import Foundation
import JobStore
import Jobs
import MomentsContract
import MomentsModel
import Storage

/// The figures at the top of every overview, refreshed for the live stream at most every 2 s
/// however many consoles are open.
struct ConsoleFigures: Sendable {
    var queue: QueueStats?
    var counts: [JobStatus: Int]
    var workersAlive: Int
    var paused: Bool { queue?.paused ?? false }

    static func read(_ jobs: Jobs, _ store: JobStore) async -> ConsoleFigures {
        async let queue = try? jobs.stats()
        async let counts = try? store.countsByStatus()
        async let workers = try? store.workers(within: JobStore.workerLivenessWindow)
        let stats = await queue
        return ConsoleFigures(queue: stats, counts: await counts ?? [:], workersAlive: (await workers ?? []).filter(\.alive).count)
    }

    /// What the page shows and the live stream sends, by `data-stat` name.
    var values: [String: Any] {
        var values: [String: Any] = [
            "ready": queue.map { String($0.ready) } ?? "?", "delayed": queue.map { String($0.delayed) } ?? "?",
            "in_flight": queue.map { String($0.inFlight) } ?? "?", "dead_lettered": queue.map { String($0.deadLettered) } ?? "?",
            "oldest_wait": queue.map { $0.ready == 0 ? "–" : ConsoleFormat.span($0.oldestReadySeconds) } ?? "?",
            "workers_alive": String(workersAlive), "paused": paused,
            "queue_state": paused ? "Queue paused" : "Queue running", "queue_word": paused ? "paused" : "running",
        ]
        for status in JobStatus.allCases { values["status_\(status.rawValue)"] = String(counts[status] ?? 0) }
        return values
    }

    var json: String {
        let data = (try? JSONSerialization.data(withJSONObject: values, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Turning records into what the templates show. Absent values are left out of a context, never
/// put in as an optional (Mustache would print "nil" and treat it as present).
enum ConsolePages {
    static func present(_ values: [String: Any?]) -> [String: Any] { values.compactMapValues { $0 } }

    static func jobRow(_ job: JobRecord) -> [String: Any] {
        let id = job.id.uuidString.lowercased()
        return [
            "id": id, "short_id": String(id.prefix(8)), "status": job.status.rawValue, "progress": job.progress,
            "attempt": "\(job.attempt)/\(job.maxAttempts)", "file": job.originalFilename ?? "", "owner": job.owner ?? "",
            "error_code": job.errorCode ?? "", "created": ConsoleFormat.time(job.createdAt), "created_iso": ConsoleFormat.iso(job.createdAt),
        ]
    }

    static func charts(_ buckets: [ThroughputBucket], range: ThroughputRange) -> [String: Any] {
        let first = buckets.first.map { ConsoleFormat.time($0.start) } ?? "", last = "now"
        let bucketName =
            switch range {
            case .hour: "minute"
            case .day: "half hour"
            case .week: "six hours"
            }
        let throughput = SVGChart(
            title: "Jobs ended per \(bucketName)", unit: "jobs", kind: .stackedBars, labels: (first, last),
            series: [
                .init(name: "completed", colour: "#2da44e", values: buckets.map { Double($0.completed) }),
                .init(name: "failed", colour: "#cf222e", values: buckets.map { Double($0.failed) }),
                .init(name: "cancelled", colour: "#bf8700", values: buckets.map { Double($0.cancelled) }),
            ])
        let latency = SVGChart(
            title: "Processing time", unit: "s", kind: .lines, labels: (first, last),
            series: [
                .init(name: "p50", colour: "#0969da", values: buckets.map(\.p50Seconds)),
                .init(name: "p95", colour: "#8250df", values: buckets.map(\.p95Seconds)),
            ])
        let speed = SVGChart(
            title: "Real-time factor", unit: "×", kind: .lines, labels: (first, last),
            series: [
                .init(name: "median", colour: "#1a7f37", values: buckets.map(\.realTimeFactor))
            ])
        let p95 = buckets.compactMap(\.p95Seconds).max()
        return present([
            "throughput": throughput.svg, "latency": latency.svg, "speed": speed.svg, "bucket": bucketName, "range": range.rawValue,
            "completed": buckets.reduce(0) { $0 + $1.completed }, "failed": buckets.reduce(0) { $0 + $1.failed },
            "cancelled": buckets.reduce(0) { $0 + $1.cancelled }, "p95": p95.map { String(format: "%.1f", $0) },
        ])
    }

    /// One row per attempt, from the job's history: an attempt starts with `→ processing` and
    /// ends with the next change of the same attempt.
    static func attempts(_ events: [JobEvent]) -> [[String: Any]] {
        var rows: [[String: Any]] = []
        var open: (attempt: Int, worker: String?, started: Date)?
        func close(_ ended: Date?, outcome: String, diagnostics: String? = nil) {
            guard let current = open else { return }
            rows.append(
                present([
                    "number": current.attempt, "worker": current.worker ?? "", "started": ConsoleFormat.time(current.started),
                    "ended": ConsoleFormat.time(ended),
                    "took": ended.map { ConsoleFormat.span($0.timeIntervalSince(current.started)) } ?? "running",
                    "outcome": outcome, "diagnostics": diagnostics,
                ]))
            open = nil
        }
        for event in events {
            if event.to == .processing {
                close(event.at, outcome: "taken over")
                open = (event.attempt, event.worker, event.at)
            } else if let current = open, event.from == .processing, event.attempt == current.attempt {
                let detail = event.detail.flatMap { $0 == event.to.rawValue ? nil : $0 }
                let outcome = event.to == .pending ? "retry: \(detail ?? "")" : "\(event.to.rawValue)\(detail.map { ": \($0)" } ?? "")"
                close(event.at, outcome: outcome, diagnostics: event.diagnostics)
            }
        }
        close(nil, outcome: "running")
        return rows
    }

    static func event(_ event: JobEvent) -> [String: Any] {
        present([
            "at": ConsoleFormat.time(event.at), "from": event.from?.rawValue, "to": event.to.rawValue, "attempt": event.attempt,
            "worker": event.worker, "detail": event.detail,
        ])
    }

    static func webhook(_ delivery: WebhookDeliveryRecord, csrf: String) -> [String: Any] {
        present([
            "id": delivery.id, "event": delivery.event, "url": delivery.url, "state": delivery.state, "attempts": delivery.attempts,
            "last_status": delivery.lastStatus.map(String.init) ?? "", "last_error": delivery.lastError ?? "",
            "redelivery_of": delivery.redeliveryOf, "csrf": csrf,
        ])
    }

    static func operation(_ operation: OperationRecord) -> [String: Any] {
        let processed = operation.done + operation.skipped + operation.failed
        return present([
            "id": operation.id, "at": ConsoleFormat.time(operation.createdAt), "actor": operation.actor, "action": operation.action.rawValue,
            "job": operation.jobID?.uuidString.lowercased(),
            "short_job": operation.jobID.map { String($0.uuidString.lowercased().prefix(8)) } ?? "",
            "bulk": operation.isBulk, "matched": operation.matched ?? 0, "state": operation.state.rawValue,
            "progress": operation.isBulk ? "\(processed) of \(operation.matched ?? 0)" : (operation.state == .done ? "yes" : "no"),
            "message": operation.message ?? "",
        ])
    }

    static func worker(_ worker: WorkerRecord, now: Date = Date()) -> [String: Any] {
        [
            "id": worker.id, "state": worker.state, "host": worker.host, "pid": worker.pid, "version": worker.version,
            "started": ConsoleFormat.time(worker.startedAt), "concurrency": worker.concurrency, "running": worker.running,
            "finished": worker.jobsFinished, "heartbeat": ConsoleFormat.time(worker.lastHeartbeatAt),
            "heartbeat_age": ConsoleFormat.span(max(0, now.timeIntervalSince(worker.lastHeartbeatAt))),
            "jobs": worker.currentJobs.map { ["id": $0.uuidString.lowercased(), "short": String($0.uuidString.lowercased().prefix(8))] },
        ]
    }

    /// The job's fields, with links to its objects where storage signs URLs, and to its trace
    /// where `TRACE_URL_TEMPLATE` says where traces are.
    static func fields(_ job: JobRecord, storage: any ObjectStore, linkLifetime: Duration, traceURL: String? = nil) -> [[String: Any]] {
        func link(_ key: String?) -> String? {
            guard let key, let signer = storage.presigning else { return nil }
            return try? signer.signedURL(for: key, method: "GET", expires: linkLifetime).absoluteString
        }
        let sourceGone = job.sourceDeletedAt != nil || job.resultExpiredAt != nil
        var fields: [(String, String?, String?)] = [
            ("owner", job.owner ?? "anonymous", nil), ("file", job.originalFilename, nil),
            (
                "source", "\(job.sourceKey) (\(ConsoleFormat.bytes(job.sourceSize)))\(sourceGone ? ", deleted" : "")",
                sourceGone ? nil : link(job.sourceKey)
            ),
            (
                "result", job.resultKey.map { "\($0) (\(ConsoleFormat.bytes(job.resultSize)))\(job.resultExpiredAt != nil ? ", expired" : "")" },
                job.resultExpiredAt == nil ? link(job.resultKey) : nil
            ),
            ("target", "\(Int(job.targetDuration)) s, \(job.quality.rawValue), codec \(job.codec.rawValue)", nil),
            ("source length", job.sourceDuration.map { String(format: "%.1f s", $0) }, nil),
            ("attempt", "\(job.attempt) of \(job.maxAttempts)", nil),
            ("lease", job.leaseOwner.map { "\($0) until \(ConsoleFormat.time(job.leaseExpiresAt))" }, nil),
            ("created", ConsoleFormat.time(job.createdAt), nil), ("started", job.startedAt.map { ConsoleFormat.time($0) }, nil),
            ("ended", job.completedAt.map { ConsoleFormat.time($0) }, nil),
            ("took", job.startedAt.flatMap { start in job.completedAt.map { ConsoleFormat.span($0.timeIntervalSince(start)) } }, nil),
            ("erased", job.erasedAt.map { "\(ConsoleFormat.time($0)), at its owner's request" }, nil),
            ("callback", job.callbackURL, nil),
            // The app's own strings, as the API shows them (Mustache escapes them for HTML).
            ("metadata", job.metadata.map(JobMetadata.json), nil),
            ("trace", job.traceID, traceURL),
        ]
        fields.removeAll { $0.1 == nil || $0.1 == "" }
        return fields.map { present(["name": $0.0, "value": $0.1 ?? "", "href": $0.2]) }
    }
}

extension JobFilter {
    /// The filter a console URL or form names: `status`, `code`, `owner`, `file`, `from`, `to`
    /// (UTC, as `datetime-local` sends it).
    init(fields: FormFields) throws(APIError) {
        var statuses: [JobStatus] = []
        if let text = fields["status"] {
            for name in text.split(separator: ",") {
                guard let status = JobStatus(rawValue: String(name)) else {
                    throw APIError(
                        .badRequest, .invalidFilter,
                        "'\(name)' is not a job status: use pending, processing, completed, failed or cancelled.")
                }
                statuses.append(status)
            }
        }
        func time(_ name: String) throws(APIError) -> Date? {
            guard let text = fields[name] else { return nil }
            var iso = text
            if iso.count == 16 { iso += ":00" }
            if !iso.hasSuffix("Z") { iso += "Z" }
            guard let date = try? Date(iso, strategy: .iso8601) else {
                throw APIError(.badRequest, .invalidFilter, "'\(text)' is not a time: write 2026-11-23T10:00 (UTC).")
            }
            return date
        }
        for name in ["code", "owner", "file"] where (fields[name]?.count ?? 0) > 200 {
            throw APIError(.badRequest, .invalidFilter, "The \(name) filter is longer than 200 characters.")
        }
        self.init(
            statuses: statuses, errorCode: fields["code"], owner: fields["owner"]?.lowercased(), fileName: fields["file"],
            createdFrom: try time("from"), createdBefore: try time("to"))
    }

    /// The fields that name this filter (for links and hidden form fields).
    var fields: [(String, String)] {
        var fields: [(String, String)] = []
        if !statuses.isEmpty { fields.append(("status", statuses.map(\.rawValue).joined(separator: ","))) }
        if let errorCode { fields.append(("code", errorCode)) }
        if let owner { fields.append(("owner", owner)) }
        if let fileName { fields.append(("file", fileName)) }
        if let createdFrom { fields.append(("from", ConsoleFormat.inputValue(createdFrom))) }
        if let createdBefore { fields.append(("to", ConsoleFormat.inputValue(createdBefore))) }
        return fields
    }
}
