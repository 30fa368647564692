import Foundation
import MomentsModel

/// Limits on what Moments accepts: length, picture size, and where decoding turns lean.
public struct MediaLimits: Sendable {
    public var minimumDuration = Double(HighlightLimits.minimumSourceDuration)
    public var maximumDuration = Double(HighlightLimits.maximumSourceDuration)
    /// 8K UHD: 7680 × 4320 (either orientation).
    public var maximumLongSide = 7680
    public var maximumShortSide = 4320

    public init(maximumDuration: Double = Double(HighlightLimits.maximumSourceDuration)) { self.maximumDuration = maximumDuration }

    /// The largest picture any decoder may allocate.
    public var maximumPixels: Int { maximumLongSide * maximumShortSide }

    /// The largest decoded picture (bytes of luma) the engine keeps several of in flight. Above
    /// it the analysis runs one sample runner (its decoder working a picture's slices or wavefront
    /// rows on two threads) instead of two, which saves a decoder's pictures for 10-bit 1080p HDR;
    /// and pictures above 1080p are decoded on slice threads without frame threading, so 4K and 8K
    /// sources keep as few as the stream needs.
    public static let frameThreadingBytes = 1920 * 1088

    /// Above this many bytes of luma (beyond 4K: 5K, 6K, 8K) a decoded picture with its motion
    /// tables is 30–70 MB and a decoder holds as many as the stream's references and reordering
    /// need (five for B-pyramid H.264), so the analysis decodes one stream of pictures at a time
    /// (sample runs on the scanning thread, not beside the dense decoding) and frees each decoder's
    /// pictures once its GOP is done, and the render encodes on slice threads.
    public var leanDecodingBytes = 4096 * 2304

    public func decodesLean(_ info: MediaInfo) -> Bool { info.pictureBytes > leanDecodingBytes }
}
