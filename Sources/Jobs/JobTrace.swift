import JobStore
import Tracing

/// How one job stays one trace across processes: `Jobs.submit` writes the propagation headers of
/// its span (W3C `traceparent` and `tracestate`) with the job, and each attempt on a worker and
/// each webhook delivery continues from them. With tracing off (no tracer bootstrapped) nothing is
/// written and every span is a no-op.
public enum JobTrace {
    /// The propagation headers of `context`, or of the current task's; nil when there is no
    /// traced span to continue.
    public static func headers(of context: ServiceContext? = ServiceContext.current) -> [String: String]? {
        guard let context else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        return carrier.isEmpty ? nil : carrier
    }

    /// The context a job's work continues: its stored trace, or a new trace when it has none.
    public static func context(of job: JobRecord) -> ServiceContext {
        var context = ServiceContext.topLevel
        if let carrier = job.traceContext {
            InstrumentationSystem.instrument.extract(carrier, into: &context, using: DictionaryExtractor())
        }
        return context
    }

    /// The attributes every span about `job` carries.
    public static func describe(_ job: JobRecord, in attributes: inout SpanAttributes) {
        attributes["moments.job.id"] = job.id.uuidString.lowercased()
        attributes["moments.job.attempt"] = job.attempt
    }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
