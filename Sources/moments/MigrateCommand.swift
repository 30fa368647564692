import ArgumentParser
import Foundation

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Brings the job database's schema up to date (safe to run from several processes at once).")

    func run() async throws {
        try await reportingErrors {
            let services = try await Services.fromEnvironment(label: "moments.migrate")
            let applied = try await services.run { services in
                let now = try await services.store.migrate()
                return (now, try await services.store.appliedMigrations())
            }
            print(
                applied.0.isEmpty
                    ? "schema up to date (versions \(applied.1.map(String.init).joined(separator: ", ")))"
                    : "applied versions \(applied.0.map(String.init).joined(separator: ", "))")
        }
    }
}
