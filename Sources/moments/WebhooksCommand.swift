import ArgumentParser
import Foundation
import JobStore
import Jobs

/// `moments webhooks list|redeliver`: a job's webhook deliveries, and sending one again.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Lists a job's webhook deliveries and sends one again.",
        subcommands: [List.self, Redeliver.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists a job's webhook deliveries, oldest first.")

        @Argument(help: "The job id.") var job: String

        func run() async throws {
            try await reportingErrors {
                guard let id = UUID(uuidString: job) else { throw JobStoreError(.notFound, "'\(job)' is not a job id (a UUID).") }
                let services = try await Services.fromEnvironment(label: "moments.webhooks")
                let deliveries = try await services.run { services in try await services.store.webhookDeliveries(job: id) }
                print(
                    JobsCommand.table(
                        ["delivery", "event", "state", "attempts", "last status", "again of", "url"],
                        deliveries.map { hook in
                            [
                                "\(hook.id)", hook.event, hook.state, "\(hook.attempts)", hook.lastStatus.map(String.init) ?? "",
                                hook.redeliveryOf.map(String.init) ?? "", hook.url,
                            ]
                        }))
                if deliveries.isEmpty { print("(no webhook deliveries)") }
            }
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sends a webhook delivery again: a new delivery of the same event to the same URL, due now.")

        @Argument(help: "The delivery's number (from `moments webhooks list JOB` or the console).") var delivery: Int64

        func run() async throws {
            try await reportingErrors {
                let services = try await Services.fromEnvironment(label: "moments.webhooks")
                let again = try await services.run { services in try await services.controls.redeliver(delivery) }
                guard let again else { throw JobStoreError(.notFound, "There is no webhook delivery \(delivery).") }
                print("delivery \(again.id) repeats \(delivery) (\(again.event) to \(again.url)); a worker sends it within seconds")
            }
        }
    }
}
