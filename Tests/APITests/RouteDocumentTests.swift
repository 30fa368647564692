import API
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs
import Logging
import Prometheus
import ServiceTestSupport
import Storage
import Testing

/// The other half of the agreement with `/openapi.yaml`: every route the router has is described.
@Suite("OpenAPI document", .quiet)
struct RouteDocumentTests {
    @Test("Every route of the router is an operation of /openapi.yaml, and no operation lacks a route")
    func everyRouteIsDocumented() throws {
        let logger = Logger(label: "test")
        // Nothing here connects: the router is only built and read.
        let store = JobStore(configuration: try DatabaseConfiguration(url: "postgres://u:p@127.0.0.1:1/none"), logger: logger)
        let storage = try LocalObjectStore(root: FileManager.default.temporaryDirectory)
        let services = APIServices(
            store: store, queue: MemoryQueue(), storage: storage, reservations: MemoryPersistStore(),
            rateLimits: MemoryRateLimitStore(), logger: logger)
        let router = buildRouter(configuration: APIConfiguration(), services: services, metrics: PrometheusCollectorRegistry())
        // The operator console (/admin) is HTML pages for people, not the API; docs/operating.md documents it.
        let routed = Set(router.routes.map { "\($0.method.rawValue) \($0.path.description)" }.filter { !$0.contains(" /admin") })
        let documented = Set(Self.operations(in: OpenAPIDocument.yaml))
        #expect(routed.count >= 20)
        #expect(routed.subtracting(documented).isEmpty, "routes missing from the document: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented without a route: \(documented.subtracting(routed).sorted())")
    }

    @Test("Every operation in the served /openapi.yaml answers (none is an unknown route or method)")
    func everyOperationAnswers() async throws {
        try await InProcessAPI.run { api in
            let document = try await api.get("/openapi.yaml")
            #expect(document.status == 200 && document.text.hasPrefix("openapi: 3.1.0"))
            let file = TestServices.repository.appendingPathComponent("Sources/API/Resources/openapi.yaml")
            #expect(document.body == (try Data(contentsOf: file)), "served byte for byte as the file is written")
            let operations = Self.operations(in: document.text)
            #expect(operations.count == 26, "\(operations)")
            for operation in operations {
                let parts = operation.split(separator: " ")
                let method = try #require(HTTPRequest.Method(String(parts[0])))
                let path = parts[1].replacingOccurrences(of: "{id}", with: UUID().uuidString)
                    .replacingOccurrences(of: "{file}", with: "highlight.mp4")
                // Server-Sent Events stream until the job ends; for a job that is not there they answer 404 at once.
                let reply = try await api.send(method, path)
                #expect(reply.status != 405, "\(operation) answered 405")
                if reply.status == 404 {
                    // A 404 must be about the (random) job, never an unknown route.
                    #expect(operation.contains("{id}"), "\(operation) is not routed")
                    #expect(try reply.error().code == "job_not_found", "\(operation): \(reply.text)")
                }
            }
        }
    }

    @Test("A generator can use the document: operationIds and tags on every operation, one Error schema, Location on 302s, servers")
    func generatorReady() throws {
        let yaml = OpenAPIDocument.yaml
        let blocks = Self.operationBlocks(in: yaml)
        var ids: [String] = []
        for (operation, lines) in blocks {
            let id = lines.first { $0.hasPrefix("      operationId: ") }.map { String($0.dropFirst("      operationId: ".count)) }
            #expect(id?.wholeMatch(of: /[a-z][A-Za-z]+/) != nil, "\(operation) has no operationId in lowerCamelCase")
            ids += id.map { [$0] } ?? []
            #expect(lines.contains { $0.hasPrefix("      tags: [") }, "\(operation) has no tags")
            for line in lines where line.contains("'302':") {
                #expect(line.contains("Location:"), "\(operation): a 302 without its Location header")
            }
        }
        #expect(Set(ids).count == ids.count, "an operationId twice: \(ids.sorted())")
        // References name whole components (never a part of one: a response's content, a schema's property).
        let references = yaml.matches(of: /\$ref: '#\/components\/(\w+)\/([\w.-]+)([^']*)'/)
        #expect(!references.isEmpty)
        for reference in references { #expect(reference.output.3.isEmpty, "a reference into a component: \(reference.output.0)") }
        #expect(yaml.contains("\n  schemas:\n    Error:\n"), "components/schemas/Error")
        #expect(yaml.contains("\nservers:\n") && yaml.contains("\ntags:\n"))
        // Every component a reference names is there.
        for reference in references {
            let (kind, name) = (String(reference.output.1), String(reference.output.2))
            let section = yaml.components(separatedBy: "\n  \(kind):\n").dropFirst().first ?? ""
            #expect(section.contains("\n    \(name):") || section.hasPrefix("    \(name):"), "#/components/\(kind)/\(name) is not there")
        }
    }

    /// Each operation's lines (from its method to the next operation, path or the end of `paths:`).
    static func operationBlocks(in yaml: String) -> [(operation: String, lines: [Substring])] {
        var blocks: [(operation: String, lines: [Substring])] = []
        var path: String?
        var inPaths = false
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, !line.hasPrefix(" "), !line.isEmpty { break }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
                continue
            }
            if let method = ["get", "post", "put", "delete", "patch"].first(where: { line == "    \($0):" }), let path {
                blocks.append(("\(method.uppercased()) \(path)", []))
            } else if !blocks.isEmpty {
                blocks[blocks.count - 1].lines.append(line)
            }
        }
        return blocks
    }

    /// `METHOD /path` for each operation under `paths:`.
    static func operations(in yaml: String) -> [String] {
        operationBlocks(in: yaml).map(\.operation)
    }
}
