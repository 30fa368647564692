import CFFmpeg

/// How an H.264 or HEVC stream stores its pictures in an MP4/MOV: NAL units each behind a
/// big-endian length of `lengthSize` bytes (the `avcC`/`hvcC` layout). Streams in Annex B form
/// (start codes, as in MPEG-TS) have no `Bitstream`.
public struct Bitstream: Sendable, Equatable {
    public enum Codec: String, Sendable { case h264, hevc }

    public let codec: Codec
    public let lengthSize: Int

    /// Reads the layout from a stream's codec parameters (its `avcC`/`hvcC` extradata).
    package init?(parameters: UnsafePointer<AVCodecParameters>) {
        let p = parameters.pointee
        guard let extradata = p.extradata, p.extradata_size > 0, extradata[0] == 1 else { return nil }
        switch p.codec_id {
        case AV_CODEC_ID_H264 where p.extradata_size >= 7:
            codec = .h264
            lengthSize = Int(extradata[4] & 3) + 1
        case AV_CODEC_ID_HEVC where p.extradata_size >= 23:
            codec = .hevc
            lengthSize = Int(extradata[21] & 3) + 1
        default:
            return nil
        }
        guard lengthSize != 3 else { return nil }
    }

    /// The role of an access unit for random access, from the type of its first picture NAL unit.
    public enum PictureKind: UInt8, Sendable, Codable {
        /// Instantaneous decoder refresh: nothing before it is referenced (H.264 IDR, HEVC IDR).
        case idr
        /// HEVC clean random access: may be followed (in decode order) by RASL pictures that
        /// reference the previous GOP.
        case cra
        /// HEVC broken link access: a CRA whose leading RASL pictures are to be dropped.
        case bla
        /// HEVC random access skipped leading picture: undecodable when decoding starts at its CRA.
        case rasl
        /// HEVC random access decodable leading picture.
        case radl
        /// Any other picture (P, B, or an H.264 I picture that is not IDR).
        case other
        /// No picture NAL unit could be read (damaged data).
        case unknown

        /// A picture a decoder can start at (after a CRA's RASL pictures are dropped).
        public var isRandomAccessPoint: Bool { self == .idr || self == .cra || self == .bla }
    }

    /// The kind of the access unit in `bytes` (one packet).
    public func pictureKind(_ bytes: UnsafeBufferPointer<UInt8>) -> PictureKind {
        var kind = PictureKind.unknown
        forEachNAL(in: bytes) { offset, _ in
            let header = bytes[offset]
            switch codec {
            case .h264:
                let type = header & 0x1F
                guard (1...5).contains(type) else { return true }
                kind = type == 5 ? .idr : .other
            case .hevc:
                let type = (header >> 1) & 0x3F
                guard type < 32 else { return true }
                switch type {
                case 16...18: kind = .bla
                case 19, 20: kind = .idr
                case 21: kind = .cra
                case 6, 7: kind = .radl
                case 8, 9: kind = .rasl
                default: kind = .other
                }
            }
            return false
        }
        return kind
    }

    /// Whether the access unit in `bytes` is an H.264 picture coded on its own (its first slice of
    /// type I or SI) without being an IDR picture: what x264 codes on a change of picture it finds
    /// too soon after a keyframe to start a GOP. False for HEVC (its slice headers need the
    /// picture parameter set to read) and for damaged data.
    public func isIntraPicture(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard codec == .h264 else { return false }
        var intra = false
        forEachNAL(in: bytes) { offset, size in
            let type = bytes[offset] & 0x1F
            guard (1...5).contains(type) else { return true }
            if type == 1 {
                // The slice header: first_mb_in_slice ue(v), then slice_type ue(v) (2, 7: I; 4, 9: SI).
                var reader = ExpGolombReader(bytes, from: offset + 1, to: offset + size)
                if reader.unsigned() != nil, let sliceType = reader.unsigned() { intra = [2, 4, 7, 9].contains(sliceType) }
            }
            return false
        }
        return intra
    }

    /// Whether the NAL units' length prefixes tile `bytes` exactly: a packet whose lengths do not add
    /// up has been damaged, and copying it would hand the damage to every player.
    public func isWellFormed(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var end = 0
        forEachNAL(in: bytes) { offset, size in
            end = offset + size
            return true
        }
        return end == bytes.count && end > 0
    }

    /// Rewrites every HEVC CRA slice NAL unit in `bytes` as BLA_W_LP (type 21 → 16): the slice
    /// headers of the two are the same, so the change is one byte per slice. A decoder then drops
    /// the RASL pictures that would follow and starts cleanly here. Returns how many were rewritten.
    @discardableResult
    public func markCleanRandomAccessAsBrokenLink(_ bytes: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard codec == .hevc else { return 0 }
        var rewritten = 0
        forEachNAL(in: UnsafeBufferPointer(bytes)) { offset, _ in
            if (bytes[offset] >> 1) & 0x3F == 21 {
                bytes[offset] = (bytes[offset] & 0x81) | (16 << 1)
                rewritten += 1
            }
            return true
        }
        return rewritten
    }

    /// Calls `body(offset, size)` for each NAL unit until it returns false or the data ends.
    /// Lengths that run past the end stop the walk (damaged data is never read out of bounds).
    private func forEachNAL(in bytes: UnsafeBufferPointer<UInt8>, _ body: (Int, Int) -> Bool) {
        var position = 0
        while position + lengthSize < bytes.count {
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(bytes[position + i]) }
            position += lengthSize
            guard length > 0, length <= bytes.count - position else { return }
            if !body(position, length) { return }
            position += length
        }
    }
}

/// Reads Exp-Golomb codes from a NAL unit's payload, passing over emulation-prevention bytes
/// (a 3 after two zero bytes). Reads nothing past `end`.
struct ExpGolombReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let end: Int
    private var position: Int
    private var bit = 0
    private var zeros = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
        self.bytes = bytes
        self.end = min(end, bytes.count)
        position = start
    }

    private mutating func nextBit() -> Int? {
        if bit == 0 {
            guard position < end else { return nil }
            if zeros >= 2 && bytes[position] == 3 {
                position += 1
                zeros = 0
                guard position < end else { return nil }
            }
        }
        let value = Int(bytes[position] >> (7 - bit)) & 1
        bit += 1
        if bit == 8 {
            zeros = bytes[position] == 0 ? zeros + 1 : 0
            bit = 0
            position += 1
        }
        return value
    }

    /// ue(v); nil past the end or for a code longer than 31 bits (damaged data).
    mutating func unsigned() -> Int? {
        var leading = 0
        while true {
            guard let b = nextBit() else { return nil }
            if b == 1 { break }
            leading += 1
            if leading > 31 { return nil }
        }
        var value = 0
        for _ in 0..<leading {
            guard let b = nextBit() else { return nil }
            value = value << 1 | b
        }
        return (1 << leading) - 1 + value
    }
}
