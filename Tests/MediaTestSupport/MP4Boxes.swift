import Foundation

/// An MP4/MOV file as a tree of boxes, to damage one field precisely and write the file again
/// (sizes recomputed). Our writer puts `moov` after `mdat`, so resizing the index moves no sample.
public struct MP4Box {
    public var type: String
    /// The bytes after the header (a leaf), or nil for a container of `children`.
    public var payload: [UInt8]?
    public var children: [MP4Box] = []
    /// Where the box started in the file it was read from.
    public var offset: Int

    public init(type: String, payload: [UInt8]?, children: [MP4Box] = [], offset: Int) {
        self.type = type
        self.payload = payload
        self.children = children
        self.offset = offset
    }

    public static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "edts", "dinf", "mvex", "udta"]

    /// The boxes of `bytes[range]`; a box whose size runs past the end is kept to the end.
    public static func parse(_ bytes: [UInt8], _ range: Range<Int>) -> [MP4Box] {
        var boxes: [MP4Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            var header = 8
            if size == 1, offset + 16 <= range.upperBound {
                size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
                header = 16
            }
            if size == 0 { size = range.upperBound - offset }
            guard size >= header else { break }
            let end = min(offset + size, range.upperBound)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if containers.contains(type) {
                boxes.append(MP4Box(type: type, payload: nil, children: parse(bytes, offset + header..<end), offset: offset))
            } else {
                boxes.append(MP4Box(type: type, payload: Array(bytes[offset + header..<end]), offset: offset))
            }
            offset += size
        }
        return boxes
    }

    public var bytes: [UInt8] {
        let body = payload ?? children.flatMap(\.bytes)
        let size = UInt32(body.count + 8)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + body
    }

    /// Every box offset in the tree (for truncating at each one).
    public var offsets: [Int] { [offset] + children.flatMap(\.offsets) }
}

/// A whole file of boxes.
public struct MP4File {
    public var boxes: [MP4Box]

    public init(_ path: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        boxes = MP4Box.parse(bytes, 0..<bytes.count)
    }

    public var bytes: [UInt8] { boxes.flatMap(\.bytes) }

    /// The handler of a `trak` (`vide`, `soun`).
    public static func handler(of trak: MP4Box) -> String? {
        guard let hdlr = trak.children.first(where: { $0.type == "mdia" })?.children.first(where: { $0.type == "hdlr" })?.payload,
            hdlr.count >= 12
        else { return nil }
        return String(decoding: hdlr[8..<12], as: UTF8.self)
    }

    /// Changes the leaf at `path` (`["moov", "trak:vide", "mdia", "mdhd"]`; `trak:vide` is the
    /// video track) with `edit`. False, and nothing changed, when the path is missing.
    @discardableResult
    public mutating func edit(_ path: [String], _ edit: (inout [UInt8]) -> Void) -> Bool {
        Self.edit(&boxes, path[...], edit)
    }

    /// Changes the children of the container at `path`; false when the path is missing.
    @discardableResult
    public mutating func editChildren(_ path: [String], _ edit: (inout [MP4Box]) -> Void) -> Bool {
        Self.editChildren(&boxes, path[...], edit)
    }

    private static func matches(_ box: MP4Box, _ step: String) -> Bool {
        let parts = step.split(separator: ":")
        guard box.type == parts[0] else { return false }
        return parts.count == 1 || handler(of: box) == String(parts[1])
    }

    private static func edit(_ boxes: inout [MP4Box], _ path: ArraySlice<String>, _ edit: (inout [UInt8]) -> Void) -> Bool {
        guard let step = path.first, let index = boxes.firstIndex(where: { matches($0, step) }) else { return false }
        if path.count == 1 {
            guard boxes[index].payload != nil else { return false }
            edit(&boxes[index].payload!)
            return true
        }
        return Self.edit(&boxes[index].children, path.dropFirst(), edit)
    }

    private static func editChildren(_ boxes: inout [MP4Box], _ path: ArraySlice<String>, _ edit: (inout [MP4Box]) -> Void) -> Bool {
        guard let step = path.first, let index = boxes.firstIndex(where: { matches($0, step) }) else { return false }
        if path.count == 1 {
            edit(&boxes[index].children)
            return true
        }
        return Self.editChildren(&boxes[index].children, path.dropFirst(), edit)
    }
}

extension Array where Element == UInt8 {
    public func u32(at offset: Int) -> UInt32 { self[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }

    public mutating func put(_ value: UInt32, at offset: Int) {
        for i in 0..<4 { self[offset + i] = UInt8(value >> (24 - 8 * UInt32(i)) & 0xFF) }
    }

    public mutating func put16(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(value >> 8)
        self[offset + 1] = UInt8(value & 0xFF)
    }
}
