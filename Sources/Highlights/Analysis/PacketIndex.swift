import Media

/// Every video packet of the source as the analysis pass saw it, in decode (file) order: enough to
/// copy ranges of the stream later without decoding anything. About 40 bytes a packet.
public struct PacketIndex: Sendable {
    public struct Entry: Sendable, Equatable {
        /// Timestamps in the stream's time base.
        public var pts: Int64
        public var dts: Int64
        public var size: Int32
        public var isKeyframe: Bool
        public var kind: Bitstream.PictureKind
        /// Byte offset in the file (-1 when the demuxer did not say).
        public var position: Int64
    }

    public private(set) var entries: [Entry] = []
    /// Seconds per tick of the stream's time base.
    public let secondsPerTick: Double
    /// The NAL layout, for H.264/HEVC stored as in MP4; nil otherwise.
    public let bitstream: Bitstream?
    /// False once a packet had no timestamps or the file ended in damage: such a stream is not copied.
    public private(set) var isComplete = true
    /// The highest temporal sub-layer of any picture (0 but for HEVC with temporal layers, as
    /// iPhones record 60 fps): nothing refers to a non-reference picture of this layer.
    public private(set) var highestTemporalLayer = 0

    /// Whether the stream reorders pictures (B-frames): then some presentation time must differ
    /// from its decode time, or the container's timestamps are wrong.
    let reorders: Bool
    private var presentedOutOfDecodeOrder = false

    init(stream: MediaStream) {
        secondsPerTick = Double(stream.timeBase.numerator) / Double(max(1, stream.timeBase.denominator))
        bitstream = stream.bitstream
        reorders = stream.reorderDepth > 0
    }

    mutating func add(_ packet: Packet) {
        guard let pts = packet.pts, let dts = packet.dts else {
            isComplete = false
            return
        }
        if let bitstream, !bitstream.isWellFormed(packet.bytes) { isComplete = false }
        if pts != dts { presentedOutOfDecodeOrder = true }
        let kind = bitstream?.pictureKind(packet.bytes) ?? .unknown
        if let layer = bitstream?.reference(packet.bytes)?.layer { highestTemporalLayer = max(highestTemporalLayer, layer) }
        entries.append(
            Entry(
                pts: pts, dts: dts, size: Int32(clamping: packet.size), isKeyframe: packet.isKeyframe,
                kind: kind, position: packet.position ?? -1))
    }

    mutating func markIncomplete() { isComplete = false }

    /// False when the stream reorders pictures but every packet says it is presented when it is
    /// decoded: the container's composition offsets are missing or damaged, so its timestamps
    /// cannot be copied.
    public var timestampsAgreeWithStream: Bool { !reorders || presentedOutOfDecodeOrder || entries.isEmpty }

    public var count: Int { entries.count }

    /// Indices of the packets a decoder can start at (IDR, CRA, BLA), in decode order.
    public var randomAccessPoints: [Int] { entries.indices.filter { entries[$0].kind.isRandomAccessPoint } }

    /// Indices of the packets the container marks as keyframes, in decode order.
    public var keyframes: [Int] { entries.indices.filter { entries[$0].isKeyframe } }

    func seconds(_ ticks: Int64) -> Double { Double(ticks) * secondsPerTick }
}
