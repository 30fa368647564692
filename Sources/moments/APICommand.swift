import API
import ArgumentParser
import Foundation
import Hummingbird
import ServiceLifecycle
import Storage
import Worker

struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Serves the HTTP API until SIGTERM.",
        discussion: """
            Reads PORT (8000), HOST (0.0.0.0), MAX_UPLOAD_BYTES (2 GiB), PUBLIC_URL, UPLOAD_DIR, DATABASE_URL, REDIS_URL, \
            STORAGE_URL and S3_*. Applies migrations before it takes requests.
            """)

    func run() async throws {
        try await reportingErrors {
            let environment = ProcessInfo.processInfo.environment
            let services = try Services.fromEnvironment(label: "moments.api")
            let app = buildApplication(configuration: try APIConfiguration(environment: environment),
                                       services: services.api(storage: try StorageConfiguration.store(environment: environment)),
                                       logger: services.logger)
            try await app.runService()
        }
    }
}

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
            var environment = ProcessInfo.processInfo.environment
            if (environment["STORAGE_URL"] ?? "").isEmpty {
                environment["STORAGE_URL"] = "file://" + FileManager.default.currentDirectoryPath + "/.data/objects"
            }
            let services = try Services.fromEnvironment(label: "moments.dev", environment: environment)
            let storage = try StorageConfiguration.store(environment: environment)
            let work = try WorkerCommand.highlightWork(environment, services: services, storage: storage)
            let (worker, metrics) = try services.workerService(work.configuration, handler: work.handler, sweeper: work.sweeper,
                                                               environment: environment)
            let app = buildApplication(configuration: try APIConfiguration(environment: environment), services: services.api(storage: storage),
                                       background: [worker], metrics: metrics.registry, logger: services.logger)
            services.logger.info("storage", metadata: ["url": "\(environment["STORAGE_URL"] ?? "")"])
            try await app.runService()
        }
    }
}
