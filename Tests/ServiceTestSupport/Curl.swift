import Foundation
import MomentsSupport

/// Plain curl, as a client outside our code would call: returns the HTTP status, the body (when
/// not written to a file with `-o`) and the response headers.
public func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
    let text = String(decoding: try capturedOutput("/usr/bin/curl", ["-s", "-w", "\n%{http_code}"] + arguments), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
}

/// curl off the cooperative pool, for tests whose API answers in this process (on that pool).
public func curlOffPool(_ arguments: [String]) async throws -> (status: Int, body: String) {
    try await BlockingWork.run { try curl(arguments) }
}

/// The API's conventions as seen through curl: a device's token, JSON bodies, the error shape.
public enum CurlAPI {
    /// Registers a device and returns the header arguments that send its token.
    public static func device(_ base: String, name: String = "Test iPhone") throws -> [String] {
        let reply = try curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"name": "\#(name)"}"#, "\(base)/api/v1/devices"])
        guard let token = try json(reply.body)["token"] as? String else { throw TestFailure("no token: \(reply.status) \(reply.body)") }
        return ["-H", "Authorization: Bearer \(token)"]
    }

    /// `device`, off the cooperative pool (as `curlOffPool`), for an API that answers in this process.
    public static func deviceOffPool(_ base: String, name: String = "Test iPhone") async throws -> [String] {
        try await BlockingWork.run { try device(base, name: name) }
    }

    public static func json(_ text: String) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(text)")
        }
        return object
    }

    /// The one error shape: the status, `error.code` and `error.message`.
    public static func error(_ reply: (status: Int, body: String)) throws -> (status: Int, code: String, message: String) {
        guard let error = try json(reply.body)["error"] as? [String: Any] else { throw TestFailure("not the error shape: \(reply.body)") }
        return (reply.status, error["code"] as? String ?? "", error["message"] as? String ?? "")
    }
}

/// Runs `executable` to the end: its exit status and what it wrote to standard output and error.
/// `environment` is added to this process's own; `folder` is the working directory. Spawned and
/// reaped with posix calls, as `TestServices.run`: Foundation's `Process.waitUntilExit` was seen
/// never to return here (a CI run stood 25 minutes in AdminCommandTests; swift-corelibs-foundation
/// #4795: it sees a child end only when a socket the child inherited closes, and another child may
/// hold it too). The output goes to files, read once the process has exited, so that nothing need
/// drain a pipe while it runs.
public func captured(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    in folder: URL? = nil
) throws -> (status: Int32, output: Data, errors: Data) {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("moments-output-\(UUID().uuidString)")
    let files = [base.appendingPathExtension("out"), base.appendingPathExtension("err")]
    defer { for file in files { try? FileManager.default.removeItem(at: file) } }
    let pid = try TestServices.spawn(
        executable, arguments, environment: environment, output: files[0].path, errors: files[1].path, in: folder?.path)
    let status = TestServices.wait(for: pid)
    return (status, try Data(contentsOf: files[0]), try Data(contentsOf: files[1]))
}

/// What `executable` wrote to standard output (see `captured`).
public func capturedOutput(_ executable: String, _ arguments: [String]) throws -> Data {
    try captured(executable, arguments).output
}

extension Process {
    /// A process set up by `configure` and started. swift-corelibs-foundation's `run()` can fail with
    /// EBADF when another thread closes a file descriptor while it spawns the child (many tests
    /// spawn and close at once; swiftlang/swift#57827, seen in CI): the child never started then,
    /// so a fresh `Process` is set up and started again, up to four times in all.
    public static func launched(_ configure: (Process) throws -> Void) throws -> Process {
        var attempts = 0
        while true {
            let process = Process()
            try configure(process)
            do {
                try process.run()
                return process
            } catch  where attempts < 3 && isSpawnRace(error) {
                attempts += 1
            }
        }
    }

    /// EBADF from spawning, as itself or as the underlying error of a Cocoa error.
    private static func isSpawnRace(_ error: any Error) -> Bool {
        let error = error as NSError
        let posix = error.domain == NSPOSIXErrorDomain ? error : error.userInfo[NSUnderlyingErrorKey] as? NSError
        return posix?.domain == NSPOSIXErrorDomain && posix?.code == Int(EBADF)
    }
}
