import CFFmpeg
import Glibc

/// Bytes an input is read from when they are not a local file: an object in storage read by
/// ranges, or a buffer in memory (`InputFile(reading:name:)`). Called from the thread that reads
/// the input, one call at a time.
public protocol RandomAccessInput: AnyObject {
    /// The length in bytes.
    var size: Int64 { get }
    /// Copies bytes starting at `offset` (below `size`) into `buffer` and returns how many (at
    /// least one). A thrown error fails the read that needed the bytes.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// Bytes held in memory (fuzzing, tests).
public final class MemoryInput: RandomAccessInput {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var size: Int64 { Int64(bytes.count) }

    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let start = Int(offset), count = min(buffer.count, bytes.count - start)
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)])) }
        return count
    }
}

/// The position and the last failure of one custom-I/O input, behind FFmpeg's read and seek callbacks.
final class InputReader {
    let source: any RandomAccessInput
    private(set) var position: Int64 = 0
    static let bufferSize = 64 * 1024

    init(_ source: any RandomAccessInput) { self.source = source }

    /// An `AVIOContext` reading through this reader, which it retains until `free`.
    func makeContext() -> UnsafeMutablePointer<AVIOContext>? {
        guard let buffer = av_malloc(Self.bufferSize) else { return nil }
        let opaque = Unmanaged.passRetained(self).toOpaque()
        let context = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.bufferSize), 0, opaque,
            { opaque, buffer, size in
                let reader = Unmanaged<InputReader>.fromOpaque(opaque!).takeUnretainedValue()
                return reader.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(max(size, 0))))
            }, nil,
            { opaque, offset, whence in
                Unmanaged<InputReader>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            })
        if context == nil {
            av_free(buffer)
            Unmanaged<InputReader>.fromOpaque(opaque).release()
        }
        return context
    }

    /// Frees a context from `makeContext` (its buffer, which FFmpeg may have replaced, too) and
    /// releases its reader.
    static func free(_ context: UnsafeMutablePointer<AVIOContext>) {
        if let opaque = context.pointee.opaque { Unmanaged<InputReader>.fromOpaque(opaque).release() }
        av_freep(&context.pointee.buffer)
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&pointer)
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        guard position < source.size else { return moments_averror_eof() }
        let wanted = Int(min(Int64(buffer.count), source.size - position))
        guard wanted > 0 else { return moments_averror_eof() }
        do {
            let count = try source.read(at: position, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]))
            guard count > 0, count <= wanted else { return moments_averror_eof() }
            position += Int64(count)
            return Int32(count)
        } catch {
            return moments_averror_eio()
        }
    }

    private func seek(_ offset: Int64, whence: Int32) -> Int64 {
        let size = source.size
        let target: Int64
        switch whence & ~AVSEEK_FORCE {
        case AVSEEK_SIZE: return size
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position.addingReportingOverflow(offset).partialValue
        case SEEK_END: target = size.addingReportingOverflow(offset).partialValue
        default: return Int64(moments_averror_einval())
        }
        guard target >= 0 else { return Int64(moments_averror_einval()) }
        position = target
        return position
    }
}
