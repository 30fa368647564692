import CFFmpeg

/// Owns one `AVPacket`.
public final class Packet {
    package let pointer: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    deinit { freePacket(pointer) }

    /// A new packet referencing the same data (no copy of the payload).
    public func reference() -> Packet {
        let copy = Packet()
        av_packet_ref(copy.pointer, pointer)
        return copy
    }

    public func unref() { av_packet_unref(pointer) }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }
    public var size: Int { Int(pointer.pointee.size) }
    public var isKeyframe: Bool {
        get { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
        set { pointer.pointee.flags = newValue ? pointer.pointee.flags | AV_PKT_FLAG_KEY : pointer.pointee.flags & ~AV_PKT_FLAG_KEY }
    }
    public var pts: Int64? {
        get { pointer.pointee.pts == moments_nopts() ? nil : pointer.pointee.pts }
        set { pointer.pointee.pts = newValue ?? moments_nopts() }
    }
    public var dts: Int64? {
        get { pointer.pointee.dts == moments_nopts() ? nil : pointer.pointee.dts }
        set { pointer.pointee.dts = newValue ?? moments_nopts() }
    }
    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    /// Byte offset of the packet in its file (nil when the demuxer does not know).
    public var position: Int64? { pointer.pointee.pos < 0 ? nil : pointer.pointee.pos }

    /// The payload, read-only.
    public var bytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pointer.pointee.data, count: size)
    }

    /// Runs `body` on the payload after making it this packet's own (copying it if shared).
    public func withWritableBytes<T>(_ body: (UnsafeMutableBufferPointer<UInt8>) throws -> T) throws -> T {
        try check(av_packet_make_writable(pointer), "av_packet_make_writable")
        return try body(UnsafeMutableBufferPointer(start: pointer.pointee.data, count: size))
    }
}

@inline(__always)
func freePacket(_ packet: UnsafeMutablePointer<AVPacket>) {
    var p: UnsafeMutablePointer<AVPacket>? = packet
    av_packet_free(&p)
}
