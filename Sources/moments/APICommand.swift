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
            let environment = try await SettingsSources.load()
            let services = try await Services.fromEnvironment(label: "moments.api", environment: environment)
            let app = buildApplication(configuration: try APIConfiguration(environment: environment),
                                       services: services.api(storage: try StorageConfiguration.store(environment: environment)),
                                       logger: services.logger)
            try await app.runService()
        }
    }
}
