/// Which video codec a highlight may have. Stored with the job and sent by clients; never rename a case.
public enum VideoCodecChoice: String, Sendable, Codable, CaseIterable {
    /// Copy the source's H.264 or HEVC where it allows (keyframe-aligned, no re-encode), else H.264.
    case auto
    /// Always H.264 8-bit SDR (HDR sources tone-mapped to BT.709).
    case h264
}
