import API
import ArgumentParser
import Foundation
import Hummingbird
import Prometheus
import ServiceLifecycle
import Storage
import Worker

struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Serves the HTTP API until SIGTERM.",
        discussion: """
            Reads PORT (8000), HOST (0.0.0.0), MAX_UPLOAD_BYTES (2 GiB), PUBLIC_URL, UPLOAD_DIR, DATABASE_URL, REDIS_URL, \
            STORAGE_URL and S3_*, ADMIN_TOKEN for the console, OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_*) for tracing. \
            Applies migrations before it takes requests.
            """)

    func run() async throws {
        try await reportingErrors {
            let environment = try await SettingsSources.load()
            let services = try await Services.fromEnvironment(label: "moments.api", environment: environment)
            let telemetry = try Telemetry.bootstrap(environment: environment, serviceName: "moments-api", logger: services.logger)
            let metrics = PrometheusCollectorRegistry()
            HTTPMetrics.bootstrap(registry: metrics)
            var configuration = try APIConfiguration(environment: environment)
            configuration.tracing = !telemetry.isEmpty
            let app = buildApplication(
                configuration: configuration,
                services: services.api(storage: try StorageConfiguration.store(environment: environment)),
                telemetry: telemetry, metrics: metrics, logger: services.logger)
            try await app.runService()
        }
    }
}
