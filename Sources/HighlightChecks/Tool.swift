import Foundation

/// Runs the independent tools that check outputs (`ffmpeg`, `ffprobe`): a program by path or name,
/// its standard output and error through files (pipes fill up and stall a chatty program).
enum Tool {
    struct Result {
        var status: Int32
        var output: Data
        var errors: Data
        var errorText: String { String(decoding: errors, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ program: String, _ arguments: [String]) throws -> Result {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("moments-check-\(UUID().uuidString)")
        let files = [base.appendingPathExtension("out"), base.appendingPathExtension("err")]
        var handles: [FileHandle] = []
        defer {
            for handle in handles { try? handle.close() }
            for file in files { try? FileManager.default.removeItem(at: file) }
        }
        for file in files {
            guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = FileHandle(forWritingAtPath: file.path) else {
                throw Failure(description: "could not create \(file.path)")
            }
            handles.append(handle)
        }
        // swift-corelibs-foundation's `run()` can fail with EBADF when another thread closes a
        // descriptor as it spawns (swiftlang/swift#57827): the child never started, so try again.
        var attempts = 0
        while true {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
            process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = handles[0]
            process.standardError = handles[1]
            do {
                try process.run()
            } catch let error as NSError where attempts < 3 && (error.domain == NSPOSIXErrorDomain && error.code == Int(EBADF)) {
                attempts += 1
                continue
            }
            process.waitUntilExit()
            let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
            return Result(status: status, output: try Data(contentsOf: files[0]), errors: try Data(contentsOf: files[1]))
        }
    }
}
