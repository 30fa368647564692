import CFFmpeg

/// How an H.264 or HEVC stream stores its pictures in an MP4/MOV: NAL units each behind a
/// big-endian length of `lengthSize` bytes (the `avcC`/`hvcC` layout). Streams in Annex B form
/// (start codes, as in MPEG-TS) have no `Bitstream`.
public struct Bitstream: Sendable, Equatable {
    public enum Codec: String, Sendable { case h264, hevc }

    public let codec: Codec
    public let lengthSize: Int

    /// A layout given outright (`lengthSize` 1, 2 or 4).
    package init(codec: Codec, lengthSize: Int) {
        self.codec = codec
        self.lengthSize = lengthSize
    }

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

    /// Whether a later picture may refer to the access unit's picture, and its temporal sub-layer;
    /// nil when no picture NAL unit could be read. H.264: `nal_ref_idc` 0 is referred to by nothing
    /// (layer 0). HEVC: a sub-layer non-reference picture (TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N
    /// and the reserved even types below 16) is referred to by no picture of its own sub-layer, but
    /// may be by one of a higher sub-layer (`nuh_temporal_id_plus1` − 1).
    public func reference(_ bytes: UnsafeBufferPointer<UInt8>) -> (referenced: Bool, layer: Int)? {
        var found: (referenced: Bool, layer: Int)?
        forEachNAL(in: bytes) { offset, size in
            let header = bytes[offset]
            switch codec {
            case .h264:
                guard (1...5).contains(header & 0x1F) else { return true }
                found = (header & 0x60 != 0, 0)
            case .hevc:
                let type = (header >> 1) & 0x3F
                guard type < 32, size >= 2 else { return true }
                found = (!(type <= 14 && type % 2 == 0), max(0, Int(bytes[offset + 1] & 7) - 1))
            }
            return false
        }
        return found
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

    /// The settings an encoder wrote of itself in the access unit's user-data SEI messages (x264 and
    /// x265 write their options there as text, with their first picture); nil when it holds none.
    public func encoderOptions(_ bytes: UnsafeBufferPointer<UInt8>) -> EncoderOptions? {
        var options: EncoderOptions?
        forEachNAL(in: bytes) { offset, size in
            let isSEI = codec == .h264 ? bytes[offset] & 0x1F == 6 : (bytes[offset] >> 1) & 0x3F == 39
            if isSEI { options = Self.encoderOptions(inSEI: bytes, from: offset + (codec == .h264 ? 1 : 2), to: offset + size) }
            return options == nil
        }
        return options
    }

    /// The encoder's options in the SEI NAL units of an `hvcC` record (x265 writes them there, with
    /// the parameter sets, when the container keeps those out of the pictures); nil when it holds
    /// none, or the record is no `hvcC` or is damaged.
    public static func encoderOptions(inHEVCRecord record: UnsafeBufferPointer<UInt8>) -> EncoderOptions? {
        // 22 bytes of profile and layout, the count of arrays, then each array: its NAL unit type,
        // the count of its units, and each unit behind a 2-byte length.
        guard record.count > 22, record[0] == 1 else { return nil }
        var position = 23
        func number(_ size: Int) -> Int? {
            guard position + size <= record.count else { return nil }
            defer { position += size }
            return (0..<size).reduce(0) { $0 << 8 | Int(record[position + $1]) }
        }
        for _ in 0..<Int(record[22]) {
            guard let type = number(1), let units = number(2) else { return nil }
            for _ in 0..<units {
                guard let length = number(2), length <= record.count - position else { return nil }
                if type & 0x3F == 39 || type & 0x3F == 40, length > 2,
                    let options = encoderOptions(inSEI: record, from: position + 2, to: position + length)
                {
                    return options
                }
                position += length
            }
        }
        return nil
    }

    /// The options in the user-data messages of the SEI payload at `start..<end` (escaped).
    private static func encoderOptions(inSEI bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> EncoderOptions? {
        guard end > start else { return nil }
        return unregisteredUserData(in: unescaped(bytes, from: start, to: end)).lazy.compactMap(EncoderOptions.init(text:)).first
    }

    /// A NAL unit's payload without its emulation-prevention bytes (the 3 after two zero bytes).
    private static func unescaped(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var zeros = 0
        for i in start..<end {
            let byte = bytes[i]
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }

    /// The text after the UUID of each user-data-unregistered message (payload type 5) in an SEI
    /// payload; messages that run past its end stop the walk.
    private static func unregisteredUserData(in payload: [UInt8]) -> [String] {
        var texts: [String] = []
        var position = 0
        // Each message: its type and size, each as a run of 255s and a last byte, then its payload;
        // the payload ends with the RBSP trailing bits (0x80).
        func number() -> Int? {
            var value = 0
            while position < payload.count {
                let byte = Int(payload[position])
                position += 1
                value += byte
                if byte != 0xFF { return value }
            }
            return nil
        }
        while position < payload.count, payload[position] != 0x80 {
            guard let type = number(), let size = number(), size <= payload.count - position else { break }
            if type == 5, size > 16 {
                let text = payload[(position + 16)..<(position + size)].prefix { $0 != 0 }
                texts.append(String(decoding: text, as: UTF8.self))
            }
            position += size
        }
        return texts
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

/// What an encoder wrote of its own settings (x264's and x265's option strings).
public struct EncoderOptions: Sendable, Equatable {
    /// The most pictures from one keyframe to the next (`keyint`); nil where it is unbounded.
    public var maximumKeyInterval: Int?
    /// Whether it starts a GOP early on a change of picture it finds (`scenecut` above 0).
    public var keyframesOnCuts: Bool

    public init(maximumKeyInterval: Int?, keyframesOnCuts: Bool) {
        self.maximumKeyInterval = maximumKeyInterval
        self.keyframesOnCuts = keyframesOnCuts
    }

    /// Reads `keyint` and `scenecut` from an option string such as x264's (`… keyint=250
    /// keyint_min=25 scenecut=40 …`) or x265's (`… keyint=250 min-keyint=25 scenecut=40 …`, or
    /// `no-scenecut`); nil when the text names no `keyint`.
    public init?(text: String) {
        var keyint: String?
        var sceneCut: Int?
        for token in text.split(separator: " ") {
            let parts = token.split(separator: "=", maxSplits: 1)
            guard let name = parts.first else { continue }
            let value = parts.count == 2 ? String(parts[1]) : nil
            switch name {
            case "keyint": keyint = value
            case "scenecut": sceneCut = value.flatMap { Int($0) }
            case "no-scenecut": sceneCut = 0
            default: break
            }
        }
        guard let keyint else { return nil }
        if keyint == "infinite" || keyint == "-1" {
            maximumKeyInterval = nil
        } else if let frames = Int(keyint), frames > 0 {
            maximumKeyInterval = frames
        } else {
            return nil
        }
        keyframesOnCuts = (sceneCut ?? 0) > 0
    }
}
