import Foundation
import ServiceTestSupport
import Testing

/// The client commands (`moments submit|status|download`) against real `moments api` and
/// `moments worker` processes, PostgreSQL, Redis and SeaweedFS.
@Suite("Client commands against the real server", .heavy)
struct ClientCommandTests {
    /// Runs `moments` in `folder` with a configuration folder of its own (so it registers and saves a token).
    static func cli(_ arguments: [String], config: URL, in folder: URL) throws -> (status: Int32, out: String, err: String) {
        try TestServices.moments(arguments, environment: ["XDG_CONFIG_HOME": config.path], in: folder)
    }

    @Test("moments submit --wait -o, status and download: progress as it goes, the highlight saved, failures with the server's message")
    func commandLine() async throws {
        try await LiveSystem.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true"]) { base in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-cli-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let config = folder.appendingPathComponent("config")
            let submit = try Self.cli(
                [
                    "submit", TestFootage.twentySeconds, "--server", base, "--wait", "-o", "out.mp4",
                    "--duration", "8", "--quality", "low", "--metadata", "album=Summer 2026", "--metadata", "formula=a=b",
                ], config: config, in: folder)
            #expect(submit.status == 0, "\(submit.err)")
            #expect(abs(try TestFootage.duration(folder.appendingPathComponent("out.mp4").path) - 8) <= 0.5)
            for line in ["Uploading 100%", "Processing", "Downloading 100%"] { #expect(submit.err.contains(line), "\(submit.err)") }
            #expect(submit.err.contains("MB/s"), "the upload shows its rate")
            #expect(submit.out.contains("highlight saved to"))
            // The playback link printed works without the token (S3 storage: a presigned URL).
            let watch = try #require(submit.out.firstMatch(of: /watch \(until [^)]+\): (\S+)/)?.output.1, "\(submit.out)")
            #expect(try curl(["-r", "0-99", String(watch)]).status == 206)
            let id = try #require(submit.out.firstMatch(of: /job ([0-9a-f-]{36})/)?.output.1).description
            let saved = try String(contentsOf: config.appendingPathComponent("moments/credentials.json"), encoding: .utf8)
            #expect(saved.contains("mdt_"), "the registered token is kept for the next command")

            let status = try Self.cli(["status", id, "--server", base], config: config, in: folder)
            #expect(status.status == 0 && status.out.hasPrefix("completed 100%"), "\(status.out) \(status.err)")
            // --metadata key=value pairs (a value may hold "=") come back in the job's JSON.
            let json = try Self.cli(["status", id, "--server", base, "--json"], config: config, in: folder)
            let shown = try CurlAPI.json(json.out)["metadata"] as? [String: String]
            #expect(shown == ["album": "Summer 2026", "formula": "a=b"], "\(json.out)")
            // A push token: refused before the upload by a server without APNs, and when it is no hex.
            let noPush = try Self.cli(
                ["submit", TestFootage.twentySeconds, "--server", base, "--push-token", String(repeating: "ab", count: 32)], config: config,
                in: folder)
            #expect(noPush.status == 1 && noPush.err.contains("push_unavailable") && !noPush.err.contains("Uploading"), "\(noPush.err)")
            for pairs in [["--metadata", "album"], ["--metadata", "a=1", "--metadata", "a=2"], ["--push-token", "xyz"]] {
                let bad = try Self.cli(["submit", TestFootage.twentySeconds, "--server", base] + pairs, config: config, in: folder)
                #expect(bad.status == 64 && bad.err.contains(pairs[0]), "\(pairs): \(bad.status) \(bad.err)")
            }
            let download = try Self.cli(["download", id, "--server", base, "-o", "again.mp4"], config: config, in: folder)
            #expect(download.status == 0, "\(download.err)")
            #expect(
                FileManager.default.contentsEqual(
                    atPath: folder.appendingPathComponent("out.mp4").path,
                    andPath: folder.appendingPathComponent("again.mp4").path))

            let text = folder.appendingPathComponent("list.mov")
            try Data("milk, eggs, bread".utf8).write(to: text)
            let refused = try Self.cli(["submit", text.path, "--server", base, "--wait"], config: config, in: folder)
            #expect(refused.status == 1 && refused.err.contains("error: not_a_video: "), "\(refused.err)")
            let stranger = try Self.cli(["status", id, "--server", base, "--token", "mdt_notarealtoken"], config: config, in: folder)
            #expect(stranger.status == 1 && stranger.err.contains("error: invalid_token: "), "\(stranger.err)")
        }
    }

    @Test("Ctrl-C while waiting, without a terminal: the job is left running and the command says how to follow it")
    func interruptWhileWaiting() async throws {
        try await LiveSystem.withSystem(workers: 0) { base in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-cli-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var err = Pipe()
            let process = try Process.launched { process in
                process.executableURL = TestServices.momentsBinary
                process.arguments = ["submit", TestFootage.twentySeconds, "--server", base, "--wait"]
                process.currentDirectoryURL = folder
                process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": folder.path]) { $1 }
                err = Pipe()
                process.standardError = err
                process.standardOutput = FileHandle.nullDevice
                process.standardInput = FileHandle.nullDevice
            }
            let collected = Collected()
            err.fileHandleForReading.readabilityHandler = { collected.append($0.availableData) }
            let waiting = try await TestServices.eventually(timeout: .seconds(30)) { collected.text.contains("Processing") }
            #expect(waiting, "\(collected.text)")
            kill(process.processIdentifier, SIGINT)
            let ended = try await TestServices.eventually(timeout: .seconds(10)) { !process.isRunning }
            #expect(ended)
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            err.fileHandleForReading.readabilityHandler = nil
            #expect(process.terminationStatus == 130)
            #expect(collected.text.contains("keeps running; follow it with: moments status"), "\(collected.text)")
        }
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func append(_ more: Data) { lock.withLock { data.append(more) } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    }
}
