import Foundation
import MomentsSupport
import ServiceTestSupport
import Testing

/// Where `moments` reads its settings: the environment, then a `.env` file, then a secrets
/// directory, each through swift-configuration, and a bad value from any of them named.
@Suite("Settings from the environment, a .env file and a secrets directory", .heavy)
struct SettingsSourcesTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("secrets"), withIntermediateDirectories: true)
        return folder
    }

    @Test("The API starts with DATABASE_URL from a secret file and PORT from .env; the environment wins over both")
    func sourcesAndPrecedence() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { _, databaseURL in
            let folder = try Self.folder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // Secret files end in a newline, as `kubectl create secret` and editors write them.
            try Data("\(databaseURL)\n".utf8).write(to: folder.appendingPathComponent("secrets/DATABASE_URL"))
            try Data("postgres://nobody@127.0.0.1:1/never\n".utf8).write(to: folder.appendingPathComponent("secrets/REDIS_URL"))
            let port = Int.random(in: 32_000..<34_000)
            let dotenv = """
                # a comment, then a blank line

                PORT=\(port)
                HOST=127.0.0.1
                AUTH_REQUIRED=false
                LOG_LEVEL=warning
                """
            try Data(dotenv.utf8).write(to: folder.appendingPathComponent(".env"))
            let api = try MomentsProcess(
                ["api"],
                environment: [
                    "DATABASE_URL": "", "PORT": "", "HOST": "", "AUTH_REQUIRED": "", "MOMENTS_QUEUE_PREFIX": TestServices.uniquePrefix(),
                    // The environment wins: REDIS_URL here, not the secret file's.
                    "REDIS_URL": try TestServices.redisURL(database: 9),
                    "MOMENTS_SECRETS_DIR": folder.appendingPathComponent("secrets").path,
                    "MOMENTS_ENV_FILE": folder.appendingPathComponent(".env").path,
                    "STORAGE_URL": "file://\(folder.appendingPathComponent("objects").path)",
                ])
            defer { api.stop() }
            let ready = try await TestServices.eventually(timeout: .seconds(30)) {
                (try? curl(["http://127.0.0.1:\(port)/ready"]).status) == 200
            }
            #expect(ready, "the API read PORT from .env, DATABASE_URL from the secret file and REDIS_URL from the environment")
        }
    }

    @Test(
        "A bad value from .env or a secret file is refused with its name; a missing file or folder named by a setting too",
        arguments: ["env-file", "secret-file", "no-env-file", "no-secrets-dir"])
    func refusals(_ source: String) throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var environment = [
            "DATABASE_URL": "postgres://moments@127.0.0.1:1/moments", "REDIS_URL": "redis://127.0.0.1:1/0",
            "STORAGE_URL": "file:///tmp/moments-objects", "METRICS_PORT": "", "WORKER_CONCURRENCY": "",
        ]
        let expected: String
        switch source {
        case "env-file":
            try Data("WORKER_CONCURRENCY=lots\n".utf8).write(to: folder.appendingPathComponent("worker.env"))
            environment["MOMENTS_ENV_FILE"] = folder.appendingPathComponent("worker.env").path
            expected = "WORKER_CONCURRENCY must be a whole number"
        case "secret-file":
            try Data("99999\n".utf8).write(to: folder.appendingPathComponent("secrets/METRICS_PORT"))
            environment["MOMENTS_SECRETS_DIR"] = folder.appendingPathComponent("secrets").path
            expected = "METRICS_PORT must be a whole number"
        case "no-env-file":
            environment["MOMENTS_ENV_FILE"] = folder.appendingPathComponent("missing.env").path
            expected = "MOMENTS_ENV_FILE names"
        default:
            environment["MOMENTS_SECRETS_DIR"] = folder.appendingPathComponent("no-such-folder").path
            expected = "MOMENTS_SECRETS_DIR names"
        }
        let run = try TestServices.moments(["worker"], environment: environment, in: folder)
        #expect(run.status != 0)
        #expect(run.err.contains(expected), "\(source): \(run.err)")
    }
}
