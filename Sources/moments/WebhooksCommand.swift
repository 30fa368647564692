import ArgumentParser
import CurlHTTP
import Foundation
import JobStore
import Jobs
import MomentsContract
import MomentsModel
import MomentsSupport

/// `moments webhooks list|redeliver|endpoints`: a job's webhook deliveries, sending one again, and
/// the operator's endpoints.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Lists a job's webhook deliveries, sends one again, and keeps the operator's endpoints.",
        subcommands: [List.self, Redeliver.self, Endpoints.self])

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

    /// `moments webhooks endpoints add|list|remove|rotate|ping`.
    struct Endpoints: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The operator's webhook endpoints: every job's end is POSTed to each, signed with its own secret.",
            subcommands: [Add.self, ListEndpoints.self, Remove.self, Rotate.self, Ping.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Registers an endpoint and prints its secret (keep it: receivers verify with it).")

            @Argument(help: "An http:// or https:// URL where WEBHOOK_ALLOW_PRIVATE and WEBHOOK_ALLOWED_PORTS allow it.") var url: String
            @Option(help: "A note for people (at most 200 characters).") var description: String?

            func run() async throws {
                try await reportingErrors {
                    let environment = try await SettingsSources.load()
                    try await Endpoints.check(url, environment: environment)
                    if let description, description.count > 200 { throw SettingError("--description takes at most 200 characters.") }
                    let services = try await Services.fromEnvironment(label: "moments.webhooks", environment: environment)
                    let endpoint = try await services.run { services in
                        try await services.store.addWebhookEndpoint(url: url, description: description)
                    }
                    print("endpoint \(endpoint.id.uuidString.lowercased()) \(endpoint.url)")
                    print("secret \(endpoint.secret)")
                    print(
                        "every job's end is sent there from now on; try it with: moments webhooks endpoints ping \(endpoint.id.uuidString.lowercased())"
                    )
                }
            }
        }

        struct ListEndpoints: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Lists the endpoints (the secrets shortened).")

            @Flag(help: "Removed endpoints too.") var all = false

            func run() async throws {
                try await reportingErrors {
                    let services = try await Services.fromEnvironment(label: "moments.webhooks")
                    let endpoints = try await services.run { services in try await services.store.webhookEndpoints(includingRemoved: all) }
                    print(
                        JobsCommand.table(
                            ["endpoint", "url", "secret", "rotated", "state", "description"],
                            endpoints.map { endpoint in
                                [
                                    endpoint.id.uuidString.lowercased(), endpoint.url, endpoint.maskedSecret,
                                    endpoint.rotatedAt.map { MomentsJSON.format($0) } ?? "",
                                    endpoint.removedAt == nil
                                        ? (endpoint.signingSecrets().count > 1 ? "active, old secret too" : "active") : "removed",
                                    endpoint.description ?? "",
                                ]
                            }))
                    if endpoints.isEmpty { print("(no webhook endpoints)") }
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stops sending to an endpoint (deliveries not yet made are given up).")

            @Argument(help: "The endpoint's id.") var endpoint: String

            func run() async throws {
                try await reportingErrors {
                    let id = try Endpoints.id(endpoint)
                    let services = try await Services.fromEnvironment(label: "moments.webhooks")
                    guard try await services.run({ services in try await services.store.removeWebhookEndpoint(id) }) else {
                        throw JobStoreError(.notFound, "There is no webhook endpoint \(endpoint), or it was removed already.")
                    }
                    print("endpoint \(id.uuidString.lowercased()) removed")
                }
            }
        }

        struct Rotate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Gives an endpoint a new secret and prints it; deliveries carry signatures with both until the overlap ends.")

            @Argument(help: "The endpoint's id.") var endpoint: String
            @Option(help: "Hours the old secret still signs (0–168), so receivers can switch without missing a delivery.")
            var overlapHours = 24

            func run() async throws {
                try await reportingErrors {
                    let id = try Endpoints.id(endpoint)
                    guard (0...168).contains(overlapHours) else { throw SettingError("--overlap-hours takes 0 to 168.") }
                    let services = try await Services.fromEnvironment(label: "moments.webhooks")
                    let rotated = try await services.run { services in
                        try await services.store.rotateWebhookEndpoint(id, overlap: .seconds(overlapHours * 3600))
                    }
                    guard let rotated else { throw JobStoreError(.notFound, "There is no webhook endpoint \(endpoint), or it was removed.") }
                    print("secret \(rotated.secret)")
                    print(
                        overlapHours == 0
                            ? "the old secret no longer signs"
                            : "the old secret signs too until \(rotated.previousSecretUntil.map { MomentsJSON.format($0) } ?? "")")
                }
            }
        }

        struct Ping: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Sends an endpoint a signed ping (event ping) through the workers and waits for its answer; exits 1 unless it is a 2xx.")

            @Argument(help: "The endpoint's id.") var endpoint: String
            @Option(help: "Seconds to wait for a worker to send it (1–300).") var wait = 30

            func run() async throws {
                try await reportingErrors {
                    let id = try Endpoints.id(endpoint)
                    guard (1...300).contains(wait) else { throw SettingError("--wait takes 1 to 300 seconds.") }
                    let services = try await Services.fromEnvironment(label: "moments.webhooks")
                    let state = try await services.run { services -> WebhookDeliveryState? in
                        guard let delivery = try await services.store.pingWebhookEndpoint(id) else {
                            throw JobStoreError(.notFound, "There is no webhook endpoint \(endpoint), or it was removed.")
                        }
                        print("ping: delivery \(delivery)")
                        return try await services.store.webhookAnswer(of: delivery, within: .seconds(wait))
                    }
                    guard let state else {
                        throw JobStoreError(.unavailable, "No worker sent the ping within \(wait) s: is a worker running?")
                    }
                    guard state.delivered else {
                        throw JobStoreError(
                            .unavailable,
                            "The endpoint did not take the ping: \(state.outcome)\(state.gaveUp ? "" : " (the workers try again)").")
                    }
                    print("delivered: \(state.outcome)")
                }
            }
        }

        static func id(_ text: String) throws -> UUID {
            guard let id = UUID(uuidString: text) else { throw JobStoreError(.notFound, "'\(text)' is not an endpoint id (a UUID).") }
            return id
        }

        /// An absolute http(s) URL of at most 2,000 characters that the workers' destination rules allow.
        static func check(_ url: String, environment: Settings) async throws {
            guard DestinationPolicy.isWellFormed(url) else { throw SettingError("The endpoint must be \(DestinationPolicy.wellFormedRule).") }
            let policy = try DestinationPolicy(environment: environment)
            do {
                _ = try await policy.check(url)
            } catch {
                throw SettingError("The endpoint \(error.reason) (the workers check WEBHOOK_ALLOW_PRIVATE and WEBHOOK_ALLOWED_PORTS too).")
            }
        }
    }
}
