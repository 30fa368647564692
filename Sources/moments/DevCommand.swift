import API
import ArgumentParser
import Foundation
import Hummingbird
import ServiceLifecycle
import Storage
import Worker

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Runs the API and workers in one process: the whole system on one machine.",
        discussion: """
            The API's and the workers' settings as for `moments api` and `moments worker`; STORAGE_URL defaults to \
            file://<current folder>/.data/objects.
            """)

    func run() async throws {
        try await reportingErrors {
            var environment = try await SettingsSources.load()
            if (environment["STORAGE_URL"] ?? "").isEmpty {
                environment["STORAGE_URL"] = "file://" + FileManager.default.currentDirectoryPath + "/.data/objects"
            }
            let services = try await Services.fromEnvironment(label: "moments.dev", environment: environment)
            let telemetry = try Telemetry.bootstrap(environment: environment, serviceName: "moments", logger: services.logger)
            let storage = try StorageConfiguration.store(environment: environment)
            let work = try WorkerCommand.highlightWork(environment, services: services, storage: storage)
            let (worker, metrics) = try services.workerService(
                work.configuration, handler: work.handler, sweeper: work.sweeper,
                environment: environment)
            HTTPMetrics.bootstrap(registry: metrics.registry)
            var configuration = try APIConfiguration(environment: environment)
            configuration.tracing = !telemetry.isEmpty
            let app = buildApplication(
                configuration: configuration, services: services.api(storage: storage),
                background: [worker], telemetry: telemetry, metrics: metrics.registry, logger: services.logger)
            services.logger.info("storage", metadata: ["url": "\(environment["STORAGE_URL"] ?? "")"])
            try await app.runService()
        }
    }
}
