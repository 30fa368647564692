import Media

extension Decoder.Options {
    /// How to decode `info`'s video: `threads` with frame threading up to 1080p, slice threads only
    /// above it (each frame in flight of an 8K picture is 50–100 MB; slices and wavefront rows share
    /// one picture), and never a picture larger than the limits allow.
    static func video(for info: MediaInfo, threads: Int, analysis: Bool, limits: MediaLimits = MediaLimits()) -> Decoder.Options {
        let large = info.width * info.height > MediaLimits.frameThreadingBytes
        var options = Decoder.Options(
            threads: threads, frameThreads: !large && threads > 1,
            exportMotionVectors: analysis, skipLoopFilter: analysis)
        options.maximumPixels = limits.maximumPixels
        return options
    }
}
