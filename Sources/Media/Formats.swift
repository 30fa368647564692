import CFFmpeg

/// How a picture's samples are laid out in memory (FFmpeg's `AVPixelFormat`), named as FFmpeg
/// names it (`yuv420p10le`).
public struct PixelFormat: Hashable, Sendable, CustomStringConvertible {
    package let av: AVPixelFormat

    package init(_ av: AVPixelFormat) { self.av = av }

    /// The format FFmpeg calls `name`, or nil when it knows none by that name.
    public init?(name: String) {
        let format = av_get_pix_fmt(name)
        guard format != AV_PIX_FMT_NONE else { return nil }
        av = format
    }

    /// 8-bit Y′CbCr 4:2:0, what players expect of H.264.
    public static let yuv420p = PixelFormat(AV_PIX_FMT_YUV420P)
    /// 10-bit Y′CbCr 4:2:0 (16-bit little-endian words), what HDR phone video decodes to.
    public static let yuv420p10 = PixelFormat(AV_PIX_FMT_YUV420P10LE)
    /// 8-bit Y′CbCr 4:4:4.
    public static let yuv444p = PixelFormat(AV_PIX_FMT_YUV444P)
    /// 10-bit Y′CbCr 4:4:4 (16-bit little-endian words).
    public static let yuv444p10 = PixelFormat(AV_PIX_FMT_YUV444P10LE)
    /// 8-bit Y′CbCr 4:2:0 at full range (0–255), what JPEG pictures hold.
    public static let yuvj420p = PixelFormat(AV_PIX_FMT_YUVJ420P)
    /// 8-bit luma only.
    public static let gray8 = PixelFormat(AV_PIX_FMT_GRAY8)

    public var name: String { av_get_pix_fmt_name(av).map { String(cString: $0) } ?? "none" }
    public var description: String { name }

    /// Bits per luma sample (8 for `yuv420p`, 10 for `yuv420p10`), nil for an unknown format.
    public var bitDepth: Int? { av_pix_fmt_desc_get(av).map { Int($0.pointee.comp.0.depth) } }

    package var code: Int32 { av.rawValue }
}

/// How audio samples are stored (FFmpeg's `AVSampleFormat`): their type, and whether channels are
/// interleaved or each in a plane of its own.
public struct SampleFormat: Hashable, Sendable, CustomStringConvertible {
    package let av: AVSampleFormat

    package init(_ av: AVSampleFormat) { self.av = av }

    /// 32-bit floats, one plane a channel (what FFmpeg's AAC encoder takes).
    public static let floatPlanar = SampleFormat(AV_SAMPLE_FMT_FLTP)
    /// 32-bit floats, channels interleaved.
    public static let float = SampleFormat(AV_SAMPLE_FMT_FLT)
    /// 16-bit signed integers, channels interleaved.
    public static let int16 = SampleFormat(AV_SAMPLE_FMT_S16)

    public var name: String { av_get_sample_fmt_name(av).map { String(cString: $0) } ?? "none" }
    public var description: String { name }
    public var isPlanar: Bool { av_sample_fmt_is_planar(av) != 0 }
}

/// How a picture was coded (FFmpeg's `AVPictureType`).
public enum PictureType: Sendable, Hashable {
    /// Not said; given to an encoder, it lets the encoder choose.
    case unspecified
    /// Intra: coded on its own.
    case intra
    /// Predicted from earlier pictures.
    case predicted
    /// Predicted from pictures on both sides.
    case bidirectional
    /// Any other kind FFmpeg names (S, SI, SP, BI).
    case other

    package init(_ av: AVPictureType) {
        self =
            switch av {
            case AV_PICTURE_TYPE_NONE: .unspecified
            case AV_PICTURE_TYPE_I: .intra
            case AV_PICTURE_TYPE_P: .predicted
            case AV_PICTURE_TYPE_B: .bidirectional
            default: .other
            }
    }

    package var av: AVPictureType {
        switch self {
        case .unspecified, .other: AV_PICTURE_TYPE_NONE
        case .intra: AV_PICTURE_TYPE_I
        case .predicted: AV_PICTURE_TYPE_P
        case .bidirectional: AV_PICTURE_TYPE_B
        }
    }
}

/// What a stream carries (FFmpeg's `AVMediaType`).
public enum MediaType: Sendable, Hashable {
    case video, audio, subtitle, data, attachment, unknown

    package init(_ av: AVMediaType) {
        self =
            switch av {
            case AVMEDIA_TYPE_VIDEO: .video
            case AVMEDIA_TYPE_AUDIO: .audio
            case AVMEDIA_TYPE_SUBTITLE: .subtitle
            case AVMEDIA_TYPE_DATA: .data
            case AVMEDIA_TYPE_ATTACHMENT: .attachment
            default: .unknown
            }
    }

    package var av: AVMediaType {
        switch self {
        case .video: AVMEDIA_TYPE_VIDEO
        case .audio: AVMEDIA_TYPE_AUDIO
        case .subtitle: AVMEDIA_TYPE_SUBTITLE
        case .data: AVMEDIA_TYPE_DATA
        case .attachment: AVMEDIA_TYPE_ATTACHMENT
        case .unknown: AVMEDIA_TYPE_UNKNOWN
        }
    }
}

/// An exact fraction (FFmpeg's `AVRational`): time bases, frame rates, pixel shapes.
public struct Rational: Hashable, Sendable, CustomStringConvertible {
    public var numerator: Int32
    public var denominator: Int32

    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The nearest fraction to `value` whose terms stay within `limit` (29.97 → 30000/1001).
    public init(approximating value: Double, limit: Int32 = 100_000) {
        self.init(av_d2q(value, limit))
    }

    package init(_ av: AVRational) { self.init(av.num, av.den) }
    package var av: AVRational { AVRational(num: numerator, den: denominator) }

    /// The value as a number (0 when the denominator is 0, as FFmpeg's "unknown" 0/0 is).
    public var value: Double { denominator == 0 ? 0 : Double(numerator) / Double(denominator) }
    /// True for a usable fraction: both terms above zero.
    public var isPositive: Bool { numerator > 0 && denominator > 0 }
    public var description: String { "\(numerator)/\(denominator)" }
}
