import Foundation
import MomentsModel

/// How a highlight's video is made.
public enum RenderMode: String, Sendable, Codable {
    /// The source's compressed pictures copied between keyframes: no decode, no encode.
    case copy
    /// Decoded, scaled (HDR tone-mapped) and encoded as H.264.
    case encode
}

/// The render path chosen for one video, and why (written to the report).
public struct RenderDecision: Sendable, Codable, Equatable {
    public var mode: RenderMode
    public var reason: String

    /// Keyframes further apart than this would move segments too far off their moments.
    static let longestCopyableGOP = 2.5

    /// Decides whether `analysis`'s video can be copied for a highlight of `quality` under `codec`,
    /// showing the pictures `frames` keeps. Returns the keyframe grid when it can.
    static func decide(
        _ analysis: Analysis, quality: Quality, codec: VideoCodecChoice,
        frames: FrameRatePlan
    ) -> (RenderDecision, KeyframeGrid?) {
        func encode(_ reason: String) -> (RenderDecision, KeyframeGrid?) { (RenderDecision(mode: .encode, reason: reason), nil) }
        let info = analysis.info
        let packets = analysis.packets
        if codec == .h264 { return encode("codec=h264 asks for a newly encoded 8-bit SDR H.264 picture") }
        if frames.step > 1 {
            return encode(
                String(
                    format: "the video is %.2f fps and fps=30 shows every %@ picture (%.2f fps), so it is encoded",
                    info.frameRate, frames.step == 2 ? "second" : frames.step == 3 ? "third" : "\(frames.step)th",
                    frames.outputRate))
        }
        if let refusal = info.copyRefusal(quality: quality) { return encode(refusal) }
        let name = info.videoCodecName
        guard packets.bitstream != nil else {
            return encode("the stream does not store its \(name) as MP4 does (avcC/hvcC)")
        }
        guard packets.isComplete, packets.count > 0 else {
            return encode("the file is damaged or has packets without timestamps")
        }
        guard packets.timestampsAgreeWithStream else {
            return encode("the stream reorders pictures but the container gives none of them a composition offset")
        }
        guard let grid = KeyframeGrid(index: packets, origin: analysis.origin, frameInterval: info.nominalFrameInterval) else {
            return encode(
                info.videoCodec == "h264" ? "the stream does not start on an IDR picture" : "the stream does not start on a random access picture")
        }
        let longest = grid.longestGOP
        guard longest <= longestCopyableGOP + 1e-6 else {
            let kind = info.videoCodec == "h264" ? "IDR pictures" : "random access pictures"
            return encode(String(format: "%@ are up to %.1f s apart; copying needs them at most %.1f s apart", kind, longest, longestCopyableGOP))
        }
        let gop = info.videoCodec == "hevc" && packets.entries.contains(where: { $0.kind == .cra }) ? "open" : "closed"
        return (
            RenderDecision(
                mode: .copy,
                reason: String(
                    format: "%@ %d-bit 4:2:0, %@ GOPs of at most %.2f s, fits quality %@: copied without re-encoding",
                    name, info.bitDepth, gop, longest, quality.rawValue)), grid
        )
    }
}
