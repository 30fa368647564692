import Foundation
import Logging
import MomentsModel
import MomentsSupport
import OTel
import Synchronization

/// How log lines look: `LOG_FORMAT=json` (one JSON object per line, what Railway, Render and
/// Kubernetes log collectors parse), `text` (swift-log's own lines), or unset: JSON unless standard
/// error is a terminal. Set up once, before the first logger is made. Either way a line written
/// inside a traced span carries its `trace_id` and `span_id` (see `Telemetry`).
enum LogFormat: String {
    case json, text

    static func bootstrap(environment: Settings) throws(SettingError) {
        let requested = environment["LOG_FORMAT"].flatMap { $0.isEmpty ? nil : $0.lowercased() }
        let format: LogFormat
        switch requested {
        case nil: format = isatty(STDERR_FILENO) == 1 ? .text : .json
        case let name?:
            guard let chosen = LogFormat(rawValue: name) else {
                throw SettingError("LOG_FORMAT must be json or text, not '\(name)'.")
            }
            format = chosen
        }
        once.withLock { done in
            guard !done else { return }
            done = true
            let traced = OTel.makeLoggingMetadataProvider()
            switch format {
            case .json:
                LoggingSystem.bootstrap(
                    { label, provider in JSONLogHandler(label: label, metadataProvider: provider) },
                    metadataProvider: traced)
            case .text:
                LoggingSystem.bootstrap(
                    { label, provider in StreamLogHandler.standardError(label: label, metadataProvider: provider) },
                    metadataProvider: traced)
            }
        }
    }

    private static let once = Mutex(false)
}

/// `{"ts": "2026-11-22T10:15:03.123Z", "level": "info", "label": "moments.worker", "message": "job started",
/// "job_id": "…", "attempt": "1", "worker": "…", …}` on standard error, one line per entry.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        let merged = metadata.merging(metadataProvider?.get() ?? [:]) { $1 }.merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged { fields[key] = "\(value)" }
        fields["ts"] = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date())
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        fields["source"] = event.source
        if let error = event.error { fields["error"] = "\(error)" }
        guard var line = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)  // one write per line: lines from several tasks never interleave
    }
}
