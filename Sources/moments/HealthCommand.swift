import ArgumentParser
import CurlHTTP
import Foundation
import Storage

/// The container health check: one image runs every role, so it asks whichever health endpoint
/// this process serves, the API's on `PORT` or the worker's on `METRICS_PORT`.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Exits 0 when this container's API or worker answers /health on 127.0.0.1 (for HEALTHCHECK).",
        discussion: """
            Asks http://127.0.0.1:$PORT/health (the API, PORT defaults to 8000), then \
            http://127.0.0.1:$METRICS_PORT/health (a worker, 9090). A worker with METRICS_PORT=0 serves no health \
            endpoint; give it a process check instead.
            """)

    @Option(help: "Ask only this URL.")
    var url: String?

    func run() async throws {
        let environment = try await SettingsSources.load()
        let urls =
            url.map { [$0] }
            ?? [environment["PORT"] ?? "8000", environment["METRICS_PORT"] ?? "9090"]
            .filter { !$0.isEmpty && $0 != "0" }
            .map { "http://127.0.0.1:\($0)/health" }
        var answers: [String] = []
        for url in urls {
            var request = CurlRequest(method: "GET", url: url, headers: [])
            request.connectTimeout = 2
            request.totalTimeout = 4
            switch await Curl.perform(request) {
            case .success(let response) where response.status == 200:
                print("healthy: \(url)")
                return
            case .success(let response):
                answers.append("\(url) answered HTTP \(response.status)")
            case .failure(let failure):
                answers.append("\(url): \(failure.message)")
            }
        }
        FileHandle.standardError.write(Data("unhealthy: \(answers.isEmpty ? "no port to ask" : answers.joined(separator: "; "))\n".utf8))
        throw ExitStatus.failure
    }
}
