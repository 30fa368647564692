import CFFmpeg

/// A failed FFmpeg call: the function that failed and the `AVERROR` it returned.
public struct FFmpegError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let operation: String

    public init(_ code: Int32, _ operation: String) {
        self.code = code
        self.operation = operation
    }

    /// FFmpeg's own sentence for the code.
    public var reason: String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { "\(operation) failed: \(reason) (\(code))" }

    /// `AVERROR_INVALIDDATA` for `operation`: what FFmpeg says of data it cannot use.
    public static func invalidData(_ operation: String) -> FFmpegError {
        FFmpegError(moments_averror_invaliddata(), operation)
    }
}

/// Turns an FFmpeg return code into a thrown `FFmpegError`; passes non-negative values through.
@discardableResult
func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(FFmpegError) -> Int32 {
    if result < 0 { throw FFmpegError(result, operation()) }
    return result
}

/// Silences FFmpeg's own logging; the engine reports errors itself.
public enum FFmpegLog {
    public static func quiet() { av_log_set_level(AV_LOG_QUIET) }
    public static func errorsOnly() { av_log_set_level(AV_LOG_ERROR) }
}
