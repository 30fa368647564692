import CFFmpeg

/// Owns one `AVPacket`.
public final class Packet {
    public let pointer: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    deinit { av_packet_free_ptr(pointer) }

    /// A new packet referencing the same data (no copy of the payload).
    public func reference() -> Packet {
        let copy = Packet()
        av_packet_ref(copy.pointer, pointer)
        return copy
    }

    public func unref() { av_packet_unref(pointer) }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }
    public var size: Int { Int(pointer.pointee.size) }
    public var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    public var pts: Int64? { pointer.pointee.pts == moments_nopts() ? nil : pointer.pointee.pts }
    public var dts: Int64? { pointer.pointee.dts == moments_nopts() ? nil : pointer.pointee.dts }
    public var duration: Int64 { pointer.pointee.duration }
}

@inline(__always)
func av_packet_free_ptr(_ packet: UnsafeMutablePointer<AVPacket>) {
    var p: UnsafeMutablePointer<AVPacket>? = packet
    av_packet_free(&p)
}
