import Foundation
import Logging
import MomentsModel
import MomentsSupport
import OTel
import ServiceLifecycle

/// Tracing with swift-otel: spans go to an OpenTelemetry collector over OTLP/HTTP when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, and nowhere
/// otherwise. The standard `OTEL_*` variables tune it (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
/// `OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf` or `http/json`, `OTEL_EXPORTER_OTLP_HEADERS`,
/// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_SCHEDULE_DELAY`, …), read from the same sources as every other
/// setting. Logs stay on standard error (with `trace_id` and `span_id` on lines written inside a
/// span) and metrics stay on `/metrics`: only traces are exported.
enum Telemetry {
    /// The service that exports spans, to run first in the process's service group (so that it
    /// stops last and sends what the others traced while stopping); none when tracing is off.
    static func bootstrap(environment: Settings, serviceName: String, logger: Logger) throws -> [any Service] {
        let variables = Self.variables(environment)
        guard let endpoint = variables["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? variables["OTEL_EXPORTER_OTLP_ENDPOINT"],
            variables["OTEL_SDK_DISABLED"]?.lowercased() != "true", variables["OTEL_TRACES_EXPORTER"]?.lowercased() != "none"
        else {
            return []
        }
        try check(endpoint: endpoint, variables: variables)
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.resourceAttributes["service.version"] = MomentsVersion.current
        configuration.resourceAttributes["host.name"] = ProcessInfo.processInfo.hostName
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        let service = try OTel.bootstrap(configuration: configuration, environment: variables)
        logger.info("tracing on", metadata: ["endpoint": "\(endpoint)", "service": "\(variables["OTEL_SERVICE_NAME"] ?? serviceName)"])
        return [service]
    }

    /// The OpenTelemetry variables this process has, from every settings source.
    static func variables(_ environment: Settings) -> [String: String] {
        var variables: [String: String] = [:]
        for name in names { variables[name] = environment[name] }
        return variables
    }

    /// Refuses what swift-otel would only warn about and ignore: an endpoint that is no URL, or a
    /// protocol this build cannot speak.
    static func check(endpoint: String, variables: [String: String]) throws(SettingError) {
        let name = variables["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != nil ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT"
        guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            let host = url.host, !host.isEmpty
        else {
            throw SettingError(
                "\(name) must be an http:// or https:// URL (an OpenTelemetry collector's OTLP/HTTP port, e.g. http://otel-collector:4318), not '\(endpoint)'."
            )
        }
        let protocols = [
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", variables["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", variables["OTEL_EXPORTER_OTLP_PROTOCOL"]),
        ]
        for case (let key, let value?) in protocols where !["http/protobuf", "http/json"].contains(value.lowercased()) {
            throw SettingError("\(key) must be http/protobuf or http/json (Moments exports OTLP over HTTP only), not '\(value)'.")
        }
    }

    private static let names: [String] = {
        let general = [
            "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_LOG_LEVEL", "OTEL_PROPAGATORS",
            "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_SCHEDULE_DELAY",
            "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        ]
        let exporter = [
            "ENDPOINT", "INSECURE", "CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE", "HEADERS", "COMPRESSION", "TIMEOUT",
            "PROTOCOL",
        ]
        return general + exporter.flatMap { ["OTEL_EXPORTER_OTLP_\($0)", "OTEL_EXPORTER_OTLP_TRACES_\($0)"] }
    }()
}
