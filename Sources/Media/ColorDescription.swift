import CFFmpeg

/// How a picture's code values map to colour (ITU-T H.273): primaries, transfer function, matrix
/// and range, each as FFmpeg names it. Decoders read it from the stream; encoders write it into
/// the stream and the container's `colr` box.
public struct ColorDescription: Hashable, Sendable {
    public var primaries: Primaries
    public var transfer: Transfer
    public var space: Space
    public var range: Range

    public init(primaries: Primaries, transfer: Transfer, space: Space, range: Range) {
        self.primaries = primaries
        self.transfer = transfer
        self.space = space
        self.range = range
    }

    /// Nothing said: players guess (BT.709 for HD, usually).
    public static let unspecified = ColorDescription(
        primaries: .unspecified, transfer: .unspecified,
        space: .unspecified, range: .unspecified)
    /// SDR HD video: BT.709 throughout, limited range.
    public static let bt709 = ColorDescription(primaries: .bt709, transfer: .bt709, space: .bt709, range: .limited)

    /// Wide-gamut video (BT.2020 primaries and non-constant-luminance matrix, limited range) with
    /// the given transfer: `.hlg` for iPhone HDR, `.pq` for HDR10.
    public static func bt2020(transfer: Transfer) -> ColorDescription {
        ColorDescription(primaries: .bt2020, transfer: transfer, space: .bt2020, range: .limited)
    }

    public struct Primaries: Hashable, Sendable, CustomStringConvertible {
        package let av: AVColorPrimaries
        package init(_ av: AVColorPrimaries) { self.av = av }
        public static let unspecified = Primaries(AVCOL_PRI_UNSPECIFIED)
        public static let bt709 = Primaries(AVCOL_PRI_BT709)
        public static let bt2020 = Primaries(AVCOL_PRI_BT2020)
        /// FFmpeg's name (`bt709`, `bt2020`), nil when unspecified.
        public var name: String? { self == .unspecified ? nil : av_color_primaries_name(av).map { String(cString: $0) } }
        public var description: String { name ?? "unspecified" }
    }

    public struct Transfer: Hashable, Sendable, CustomStringConvertible {
        package let av: AVColorTransferCharacteristic
        package init(_ av: AVColorTransferCharacteristic) { self.av = av }

        /// The transfer FFmpeg calls `name` (`arib-std-b67`, `smpte2084`, `bt709`), nil when none.
        public init?(name: String) {
            let code = av_color_transfer_from_name(name)
            guard code >= 0 else { return nil }
            av = AVColorTransferCharacteristic(UInt32(code))
        }

        public static let unspecified = Transfer(AVCOL_TRC_UNSPECIFIED)
        public static let bt709 = Transfer(AVCOL_TRC_BT709)
        /// Hybrid log-gamma (ARIB STD-B67), what iPhones record HDR in.
        public static let hlg = Transfer(AVCOL_TRC_ARIB_STD_B67)
        /// Perceptual quantizer (SMPTE ST 2084), HDR10's.
        public static let pq = Transfer(AVCOL_TRC_SMPTE2084)
        public var name: String? { self == .unspecified ? nil : av_color_transfer_name(av).map { String(cString: $0) } }
        public var description: String { name ?? "unspecified" }
    }

    public struct Space: Hashable, Sendable, CustomStringConvertible {
        package let av: AVColorSpace
        package init(_ av: AVColorSpace) { self.av = av }
        public static let unspecified = Space(AVCOL_SPC_UNSPECIFIED)
        public static let bt709 = Space(AVCOL_SPC_BT709)
        /// BT.2020 non-constant luminance.
        public static let bt2020 = Space(AVCOL_SPC_BT2020_NCL)
        public var name: String? { self == .unspecified ? nil : av_color_space_name(av).map { String(cString: $0) } }
        public var description: String { name ?? "unspecified" }
    }

    public struct Range: Hashable, Sendable, CustomStringConvertible {
        package let av: AVColorRange
        package init(_ av: AVColorRange) { self.av = av }
        public static let unspecified = Range(AVCOL_RANGE_UNSPECIFIED)
        /// Limited ("TV", "MPEG") range: luma 16–235 at 8 bits.
        public static let limited = Range(AVCOL_RANGE_MPEG)
        /// Full ("PC", "JPEG") range: 0–255 at 8 bits.
        public static let full = Range(AVCOL_RANGE_JPEG)
        public var name: String? { self == .unspecified ? nil : av_color_range_name(av).map { String(cString: $0) } }
        public var description: String { name ?? "unspecified" }
    }
}
