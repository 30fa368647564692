import ArgumentParser
import Foundation
import MomentsKit

/// Where the server is and who we are to it: `--server` (or `MOMENTS_SERVER`, default
/// http://localhost:8000) and `--token` (or `MOMENTS_TOKEN`, or the token this machine registered
/// with that server before, kept in `~/.config/moments/credentials.json`).
struct ServerOptions: ParsableArguments {
    @Option(help: "The Moments server (default: $MOMENTS_SERVER or http://localhost:8000).")
    var server: String?

    @Option(help: "A device token (default: $MOMENTS_TOKEN, or the one saved for this server; registered when there is none).")
    var token: String?

    var serverURL: URL {
        get throws {
            let text = server ?? ProcessInfo.processInfo.environment["MOMENTS_SERVER"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://localhost:8000"
            guard let url = URL(string: text.hasSuffix("/") ? String(text.dropLast()) : text), ["http", "https"].contains(url.scheme ?? ""),
                url.host != nil
            else {
                throw ValidationError("--server must be an http:// or https:// URL, not '\(text)'.")
            }
            return url
        }
    }

    /// A client with a token: given, from the environment, saved, or registered now (and saved).
    func client(register: Bool = true) async throws -> MomentsClient {
        let url = try serverURL
        var client = MomentsClient(baseURL: url)
        if let token = token ?? ProcessInfo.processInfo.environment["MOMENTS_TOKEN"].flatMap({ $0.isEmpty ? nil : $0 }) {
            client.token = token
        } else if let saved = Credentials.token(for: url) {
            client.token = saved
        } else if register {
            let registration = try await client.registerDevice(name: "moments CLI on \(ProcessInfo.processInfo.hostName)")
            client.token = registration.token
            Credentials.save(registration.token, for: url)
        }
        return client
    }
}

/// Device tokens this machine registered, per server, readable by this user only.
enum Credentials {
    static var file: URL {
        let base =
            ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        return base.appendingPathComponent("moments/credentials.json")
    }

    static func token(for server: URL) -> String? {
        guard let data = try? Data(contentsOf: file), let tokens = try? JSONDecoder().decode([String: String].self, from: data) else { return nil }
        return tokens[server.absoluteString]
    }

    static func save(_ token: String, for server: URL) {
        var tokens = (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        tokens[server.absoluteString] = token
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try JSONEncoder().encode(tokens).write(to: file, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            FileHandle.standardError.write(Data("warning: could not save the device token in \(file.path): \(error.localizedDescription)\n".utf8))
        }
    }
}

/// Runs `body`; a `MomentsClientError` becomes `error: <code>: <the server's sentence>` and exit status 1.
func reportingClientErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MomentsClientError {
        FileHandle.standardError.write(Data("error: \(error.code): \(error.message)\n".utf8))
        throw ExitStatus.failure
    }
}
