import Media
import MomentsModel

/// The highlight's size in bytes, told in the upload's answer (`estimated_size`) before any work is
/// done, from what the probe read of the source: the app can tell its user what `quality=original`
/// will cost before the download. A highlight the engine will likely copy (what the probe read allows
/// it, `MediaInfo.copyRefusal`; every picture kept; the source's shape) keeps the source's bytes
/// a second; an encoded one is priced at the bits per pixel x264 spends at the quality's CRF on
/// phone footage (`scripts/bench-encode-settings`: 6.9 Mbit/s at 1080p30 for CRF 23). Both add
/// the 160 kbit/s AAC sound. The copy estimate is close (the engine may move edges to keyframes);
/// the encoded one is a guide, as x264 spends more on busy pictures than on calm ones.
enum SizeEstimate {
    static let soundBitsPerSecond = 160_000.0

    /// x264's bits per pixel at each quality's CRF: 0.111 at CRF 23 is measured (6.9 Mbit/s at
    /// 1080p30); the others follow x264's rule of thumb of about 12 % fewer bits a CRF step up
    /// (24, 25) and more a step down (20 at the source's size), not measured.
    static func bitsPerPixel(_ quality: Quality) -> Double {
        switch quality {
        case .high: 0.111
        case .medium: 0.099
        case .low: 0.088
        case .original: 0.16
        }
    }

    static func bytes(
        _ info: MediaInfo, targetDuration: Int, quality: Quality, codec: VideoCodecChoice,
        choices: HighlightChoices
    ) -> Int64 {
        let seconds = max(0, min(Double(targetDuration), info.duration))
        let rate = 1 / info.nominalFrameInterval
        let step = choices.fps.pictureStep(sourceRate: rate)
        var (width, height) = (Double(max(1, info.displayWidth)), Double(max(1, info.displayHeight)))
        if let ratio = choices.aspect.ratio, abs(width / height - ratio) > 0.02 * ratio {
            // The window keeps the full height of a wider picture, the full width of a narrower one.
            if width / height > ratio { width = height * ratio } else { height = width / ratio }
        }
        let long = max(width, height), limit = Double(quality.maxLongSide)
        let copied =
            codec == .auto && step == 1 && width == Double(info.displayWidth) && height == Double(info.displayHeight)
            && info.copyRefusal(quality: quality) == nil
        let videoBitsPerSecond: Double
        if copied, info.duration > 0 {
            videoBitsPerSecond = max(0, Double(info.fileSize) * 8 / info.duration - (info.hasAudio ? soundBitsPerSecond : 0))
        } else {
            let scale = long > limit ? limit / long : 1
            videoBitsPerSecond = width * scale * height * scale * rate / Double(step) * bitsPerPixel(quality)
        }
        return Int64(((videoBitsPerSecond + soundBitsPerSecond) * seconds / 8).rounded())
    }
}
