import Foundation
import MomentsModel

extension MediaInfo {
    /// The video codec as people write it: "H.264", "HEVC", or FFmpeg's name for any other.
    public var videoCodecName: String {
        switch videoCodec {
        case "h264": "H.264"
        case "hevc": "HEVC"
        default: videoCodec
        }
    }

    /// Why this video cannot be copied into a highlight of `quality`, judged on what the probe read
    /// (codec, pixels, container, pixel shape, size); nil when none of it stands in the way. The
    /// render decides on the stream's packets as well (`RenderDecision`); the upload's size estimate
    /// has only this.
    public func copyRefusal(quality: Quality) -> String? {
        guard videoCodec == "h264" || videoCodec == "hevc" else {
            return "the source is \(videoCodecName); only H.264 and HEVC are copied"
        }
        let format = pixelFormat ?? "unknown"
        let copyableFormats: Set<String> = videoCodec == "h264" ? ["yuv420p", "yuvj420p"] : ["yuv420p", "yuv420p10le"]
        guard copyableFormats.contains(format) else {
            return "the source's pixels are \(format); only \(videoCodec == "h264" ? "8-bit" : "8- or 10-bit") 4:2:0 \(videoCodecName) is copied"
        }
        guard isMP4Family else {
            return "the container is \(container); only MP4 and MOV sources are copied"
        }
        guard abs(sampleAspectRatio - 1) < 1e-3 else {
            return String(format: "the pixels are not square (sample aspect ratio %.3f)", sampleAspectRatio)
        }
        guard max(displayWidth, displayHeight) <= quality.maxLongSide else {
            return
                "the source is \(displayWidth)×\(displayHeight) and quality \(quality.rawValue) allows \(quality.maxLongSide) px; it must be scaled down"
        }
        return nil
    }
}
