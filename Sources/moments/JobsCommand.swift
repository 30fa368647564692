import ArgumentParser
import Foundation
import JobQueue
import JobStore
import Jobs
import MomentsContract
import MomentsModel
import Storage

/// `moments jobs list|show|retry|cancel|delete`: what an operator needs without writing SQL. Every
/// subcommand reads `DATABASE_URL` and `REDIS_URL` and prints a table, or JSON with `--json`.
struct JobsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs",
        abstract: "Lists, shows, retries, cancels and deletes jobs, one or every one matching filters.",
        subcommands: [List.self, Show.self, Retry.self, Cancel.self, Delete.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists jobs, newest first.")

        @Option(help: "Only jobs in this status: pending, processing, completed, failed or cancelled.") var status: JobStatus?
        @Option(help: "Only jobs created within this long: 90s, 15m, 1h, 2d.") var since: Age?
        @Option(help: "Only jobs of this owner (a device id).") var owner: String?
        @Option(help: "Only jobs that failed with this error code.") var code: String?
        @Option(help: "Only jobs whose file name contains this (any case).") var file: String?
        @Option(help: "At most this many (1 to 500).") var limit = 50
        @Flag(help: "Print JSON instead of a table.") var json = false
        @Flag(help: "Print PostgreSQL's EXPLAIN ANALYZE of the query instead of the jobs (the console's list runs the same query).")
        var explain = false

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.jobs")
                let filter = JobFilter(
                    statuses: status.map { [$0] } ?? [], errorCode: code, owner: owner?.lowercased(), fileName: file,
                    createdFrom: since.map { Date().addingTimeInterval(-$0.seconds) })
                let limit = max(1, min(limit, 500))
                if explain {
                    print(try await services.run { services in try await services.store.explainListJobs(filter, limit: limit) })
                    return
                }
                let jobs = try await services.run { services in try await services.store.listJobs(filter, limit: limit).jobs }
                if json {
                    print(try JobsCommand.json(jobs.map { JobDetails($0, links: JobLinks(base: nil)) }))
                    return
                }
                let rows = jobs.map { job in
                    [
                        job.id.uuidString.lowercased(), job.status.rawValue, "\(job.progress)%", "\(job.attempt)/\(job.maxAttempts)",
                        JobsCommand.shortDate(job.createdAt), job.errorCode ?? job.stage ?? "", job.originalFilename ?? "",
                    ]
                }
                print(JobsCommand.table(["id", "status", "progress", "attempt", "created", "code/stage", "file"], rows))
                if jobs.isEmpty { print("(no jobs)") }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Shows one job: its row, its history and its webhooks.")

        @OptionGroup var target: JobArguments

        func run() async throws {
            try await reportingErrors {
                let id = try target.jobID()
                let services = try await Services.fromEnvironment(label: "moments.jobs")
                let (job, events, webhooks) = try await services.run { services in
                    (try await services.store.job(id), try await services.store.events(id), try await services.store.webhookDeliveries(job: id))
                }
                guard let job else { throw JobStoreError(.notFound, "There is no job \(target.id).") }
                if target.json {
                    print(try JobsCommand.json(JobDetails(job, links: JobLinks(base: nil))))
                    return
                }
                let fields: [(String, String?)] = [
                    ("id", job.id.uuidString.lowercased()), ("status", job.status.rawValue), ("progress", "\(job.progress)%"),
                    ("stage", job.stage), ("message", job.message), ("error", job.errorCode.map { "\($0): \(job.errorMessage ?? "")" }),
                    ("owner", job.owner), ("file", job.originalFilename), ("source", "\(job.sourceKey) (\(job.sourceSize ?? 0) bytes)"),
                    ("result", job.resultKey.map { "\($0) (\(job.resultSize ?? 0) bytes)" }),
                    ("target", "\(Int(job.targetDuration)) s, \(job.quality.rawValue)"),
                    ("duration", job.sourceDuration.map { String(format: "%.1f s", $0) }),
                    ("attempt", "\(job.attempt) of \(job.maxAttempts)"),
                    ("lease", job.leaseOwner.map { "\($0) until \(JobsCommand.shortDate(job.leaseExpiresAt))" }),
                    ("created", JobsCommand.shortDate(job.createdAt)), ("started", job.startedAt.map(JobsCommand.shortDate)),
                    ("ended", job.completedAt.map(JobsCommand.shortDate)), ("callback", job.callbackURL),
                    ("trace", job.traceID),
                ]
                for (name, value) in fields where value != nil { print("\(name.padding(toLength: 10, withPad: " ", startingAt: 0))\(value!)") }
                print("\nhistory")
                print(
                    JobsCommand.table(
                        ["at", "from", "to", "attempt", "worker", "detail"],
                        events.map { event in
                            [
                                JobsCommand.shortDate(event.at), event.from?.rawValue ?? "", event.to.rawValue, "\(event.attempt)",
                                event.worker ?? "",
                                event.detail ?? "",
                            ]
                        }))
                // A failed attempt's engine process: how it ended and its last words (operators only).
                for event in events {
                    guard let diagnostics = event.diagnostics else { continue }
                    print("\nattempt \(event.attempt): engine process")
                    print(diagnostics.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n"))
                }
                if !webhooks.isEmpty {
                    print("\nwebhooks")
                    print(
                        JobsCommand.table(
                            ["event", "attempts", "last status", "state", "last error"],
                            webhooks.map { hook in
                                [
                                    hook.event, "\(hook.attempts)", hook.lastStatus.map(String.init) ?? "",
                                    hook.delivered ? "delivered" : hook.gaveUp ? "given up" : "waiting",
                                    hook.lastError ?? "",
                                ]
                            }))
                }
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Puts a failed job (dead-lettered ones too), or every failed job matching filters, back in the queue with fresh attempts.")

        @OptionGroup var selection: JobSelection
        @Option(help: "Attempts it gets from now.") var attempts = 3

        func run() async throws {
            try await reportingErrors {
                try await selection.act(.retry) { controls, id in
                    switch try await controls.retry(id, attempts: attempts) {
                    case .requeued(let job):
                        if selection.json {
                            print(try JobsCommand.json(JobStatusReport(job, links: JobLinks(base: nil))))
                        } else {
                            print("job \(id.uuidString.lowercased()) is pending again (attempt \(job.attempt) used, up to \(job.maxAttempts))")
                        }
                    case .notFailed(let status):
                        throw JobStoreError(.conflict, "Job \(id.uuidString.lowercased()) is \(status.rawValue); only failed jobs can be retried.")
                    case .notFound:
                        throw JobStoreError(.notFound, "There is no job \(id.uuidString.lowercased()).")
                    }
                }
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancels a pending or running job, or every one matching filters (a running one stops within 2 s).")

        @OptionGroup var selection: JobSelection

        func run() async throws {
            try await reportingErrors {
                try await selection.act(.cancel) { controls, id in
                    switch try await controls.cancel(id) {
                    case .cancelled(let from):
                        if selection.json, let job = try await controls.jobs.job(id) {
                            print(try JobsCommand.json(JobStatusReport(job, links: JobLinks(base: nil))))
                        } else {
                            print("job \(id.uuidString.lowercased()) cancelled (it was \(from.rawValue))")
                        }
                    case .alreadyFinished(let status):
                        throw JobStoreError(
                            .conflict, "Job \(id.uuidString.lowercased()) already ended \(status.rawValue); there is nothing to cancel.")
                    case .notFound:
                        throw JobStoreError(.notFound, "There is no job \(id.uuidString.lowercased()).")
                    }
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Deletes an ended job, or every ended job matching filters: its row, history, webhooks, upload and highlight (needs STORAGE_URL).")

        @OptionGroup var selection: JobSelection

        func run() async throws {
            try await reportingErrors {
                try await selection.act(.delete) { controls, id in
                    switch try await controls.delete(id) {
                    case .deleted(let keys):
                        print("job \(id.uuidString.lowercased()) deleted, with \(keys.count) object\(keys.count == 1 ? "" : "s")")
                    case .notFinished(let status):
                        throw JobStoreError(.conflict, "Job \(id.uuidString.lowercased()) is \(status.rawValue); cancel it before deleting it.")
                    case .notFound:
                        throw JobStoreError(.notFound, "There is no job \(id.uuidString.lowercased()).")
                    }
                }
            }
        }
    }

    /// One job by id, or every job matching filters (a bulk action, which needs `--yes`): shared
    /// by `retry`, `cancel` and `delete`, over the same `Operator` and `BulkRunner` as the console.
    struct JobSelection: ParsableArguments {
        @Argument(help: "The job id (or give filters instead).") var id: String?
        @Option(help: "Every job in this status (bulk).") var status: JobStatus?
        @Option(help: "Every job created within this long: 90s, 15m, 1h, 2d (bulk).") var since: Age?
        @Option(help: "Every job that failed with this error code (bulk).") var code: String?
        @Option(help: "Every job of this owner, a device id (bulk).") var owner: String?
        @Option(help: "Every job whose file name contains this (bulk).") var file: String?
        @Flag(help: "Act on every matching job; without it, a bulk action only says how many match.") var yes = false
        @Flag(help: "Print JSON instead of text (one job).") var json = false

        var filter: JobFilter {
            JobFilter(
                statuses: status.map { [$0] } ?? [], errorCode: code, owner: owner?.lowercased(), fileName: file,
                createdFrom: since.map { Date().addingTimeInterval(-$0.seconds) })
        }

        var hasFilters: Bool { status != nil || since != nil || code != nil || owner != nil || file != nil }

        func validate() throws {
            if id != nil, hasFilters { throw ValidationError("Give a job id or filters, not both.") }
            if id == nil, !hasFilters {
                throw ValidationError("Give a job id, or filters (--status, --since, --code, --owner, --file) to act on every matching job.")
            }
        }

        /// Runs `one` on the job named by id, or the bulk action on every match.
        func act(_ action: OperatorAction, one: @escaping @Sendable (Operator, UUID) async throws -> Void) async throws {
            let environment = try await SettingsSources.load()
            let services = try await Services.fromEnvironment(label: "moments.jobs", environment: environment)
            let storage: (any ObjectStore)? =
                (environment["STORAGE_URL"] ?? "").isEmpty ? nil : try StorageConfiguration.store(environment: environment)
            let controls = Operator(jobs: services.jobs, storage: storage, actor: Operator.commandLineActor)
            if let id {
                guard let uuid = UUID(uuidString: id) else { throw JobStoreError(.notFound, "'\(id)' is not a job id (a UUID).") }
                try await services.run { _ in try await one(controls, uuid) }
                return
            }
            let filter = self.filter, yes = self.yes
            try await services.run { services in
                guard let narrowed = filter.narrowed(to: action.applicableStatuses) else {
                    print("no job matching \(filter.summary) can be \(action.pastTense)")
                    return
                }
                guard yes else {
                    let matched = try await services.store.countJobs(narrowed)
                    print("\(matched) job\(matched == 1 ? "" : "s") match (\(narrowed.summary)); add --yes to \(action.rawValue) them")
                    return
                }
                let runner = BulkRunner(
                    jobs: services.jobs, storage: storage, name: Operator.commandLineActor + "-\(ProcessInfo.processInfo.processIdentifier)")
                guard let operation = try await controls.startBulk(action, filter: filter, runner: runner.name) else { return }
                print(
                    "\(action.rawValue): \(operation.matched ?? 0) matching job\(operation.matched == 1 ? "" : "s") (\(narrowed.summary)); audit log #\(operation.id)"
                )
                let ended = await runner.run(operation) { progress in
                    print(
                        "  \(progress.done + progress.skipped + progress.failed) of \(progress.matched ?? 0): \(progress.done) done, "
                            + "\(progress.skipped) skipped, \(progress.failed) failed")
                }
                print(
                    "\(ended.state.rawValue): \(ended.done) \(action.pastTense), \(ended.skipped) skipped (no longer \(action.applicableStatuses.map(\.rawValue).joined(separator: " or "))), \(ended.failed) failed"
                )
                if ended.state != .done || ended.failed > 0 {
                    throw JobStoreError(
                        .unavailable, "The bulk \(action.rawValue) did not finish cleanly (audit log #\(operation.id)); run it again to go on.")
                }
            }
        }
    }

    /// The job id and `--json`, for `show`.
    struct JobArguments: ParsableArguments {
        @Argument(help: "The job id.") var id: String
        @Flag(help: "Print JSON instead of text.") var json = false

        func jobID() throws -> UUID {
            guard let id = UUID(uuidString: id) else { throw JobStoreError(.notFound, "'\(id)' is not a job id (a UUID).") }
            return id
        }
    }

    static func json(_ value: some Encodable) throws -> String {
        String(decoding: try MomentsJSON.encoder.encode(value), as: UTF8.self)
    }

    static func shortDate(_ date: Date?) -> String {
        guard let date else { return "" }
        return Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }

    /// Columns padded to their widest cell.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}

extension JobStatus: ExpressibleByArgument {}

/// A span of time written as `90s`, `15m`, `1h` or `2d`.
struct Age: ExpressibleByArgument {
    var seconds: TimeInterval

    init?(argument: String) {
        guard let unit = argument.last, let value = Double(argument.dropLast()), value >= 0 else { return nil }
        switch unit {
        case "s": seconds = value
        case "m": seconds = value * 60
        case "h": seconds = value * 3600
        case "d": seconds = value * 86_400
        default: return nil
        }
    }
}
