import Foundation
import MomentsModel

/// What the engine learned about an input before analysing it.
public struct MediaInfo: Sendable, Codable, Equatable {
    public var container: String
    public var fileSize: Int64
    /// Seconds, from the container or the streams (refined by analysis when both are missing).
    public var duration: Double
    public var videoCodec: String
    public var pixelFormat: String?
    public var bitDepth: Int
    /// Coded (stored) picture size.
    public var width: Int
    public var height: Int
    /// Size as displayed: sample aspect ratio and rotation applied.
    public var displayWidth: Int
    public var displayHeight: Int
    public var sampleAspectRatio: Double
    /// Clockwise degrees applied to show the picture upright.
    public var rotation: Int
    /// Average frame rate (frames per second); frame timing is always taken from timestamps.
    public var frameRate: Double
    /// The codec profile's name (`High`, `Main 10`, …), when the container says.
    public var videoProfile: String?
    /// Colour description of the picture as the stream tags it (`bt709`, `bt2020`, `arib-std-b67`, …).
    public var colorPrimaries: String?
    public var colorTransfer: String?
    public var colorSpace: String?
    public var colorRange: String?
    /// `hlg` or `pq` for high dynamic range pictures (from the transfer function), `sdr` otherwise.
    public var dynamicRange: String?
    public var audioCodec: String?
    public var audioSampleRate: Int?
    public var audioChannels: Int?
    public var hasAudio: Bool
    /// The camera's timecode at the first frame (`HH:MM:SS:FF`, `;` before the frames when drop-frame), if it recorded one.
    public var startTimecode: String?

    enum CodingKeys: String, CodingKey {
        case container, fileSize = "file_size", duration, videoCodec = "video_codec", pixelFormat = "pixel_format"
        case bitDepth = "bit_depth", width, height, displayWidth = "display_width", displayHeight = "display_height"
        case sampleAspectRatio = "sample_aspect_ratio", rotation, frameRate = "fps", audioCodec = "audio_codec"
        case audioSampleRate = "audio_sample_rate", audioChannels = "audio_channels", hasAudio = "has_audio"
        case videoProfile = "video_profile", colorPrimaries = "color_primaries", colorTransfer = "color_transfer"
        case colorSpace = "color_space", colorRange = "color_range", dynamicRange = "dynamic_range"
        case startTimecode = "start_timecode"
    }

    /// Whether `text` is a SMPTE timecode: `HH:MM:SS:FF` or `HH:MM:SS;FF`, each field two digits in range.
    public static func isTimecode(_ text: String) -> Bool {
        let fields = text.split(omittingEmptySubsequences: false) { $0 == ":" || $0 == ";" || $0 == "." }
        guard text.utf8.count == 11, fields.count == 4, fields.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { return false }
        let n = fields.map { Int($0)! }
        return n[0] < 24 && n[1] < 60 && n[2] < 60 && n[3] < 120
    }

    public var isHDR: Bool { dynamicRange == "hlg" || dynamicRange == "pq" }

    /// Whether the container is MP4 or MOV (FFmpeg names the family "mov,mp4,m4a,3gp,3g2,mj2"):
    /// the only containers whose H.264/HEVC the copy path takes (`copyRefusal`).
    public var isMP4Family: Bool { container.split(separator: ",").contains("mp4") }

    /// Seconds between frames at the average frame rate (1/30 when the rate is unknown).
    public var nominalFrameInterval: Double { frameRate > 0 ? 1 / frameRate : 1.0 / 30 }

    /// Bytes of one decoded picture's luma plane (two a sample above 8 bits).
    public var pictureBytes: Int { width * height * (bitDepth > 8 ? 2 : 1) }

    public init(container: String, fileSize: Int64, duration: Double, video: MediaStream, audio: MediaStream?) {
        self.container = container
        self.fileSize = fileSize
        self.duration = duration
        videoCodec = video.codecName
        pixelFormat = video.pixelFormat?.name
        bitDepth = video.bitsPerRawSample > 0 ? video.bitsPerRawSample : (video.pixelFormat?.bitDepth ?? 8)
        width = video.width
        height = video.height
        sampleAspectRatio = video.sampleAspectRatio
        rotation = video.rotation
        let shownWidth = max(1, Int((Double(video.width) * video.sampleAspectRatio).rounded()))
        displayWidth = rotation % 180 == 0 ? shownWidth : video.height
        displayHeight = rotation % 180 == 0 ? video.height : shownWidth
        frameRate = video.averageFrameRate
        videoProfile = video.profileName
        let color = video.color
        colorPrimaries = color.primaries.name
        colorTransfer = color.transfer.name
        colorSpace = color.space.name
        colorRange = color.range.name
        dynamicRange =
            switch color.transfer {
            case .hlg: "hlg"
            case .pq: "pq"
            default: "sdr"
            }
        audioCodec = audio?.codecName
        audioSampleRate = audio?.sampleRate
        audioChannels = audio?.channels
        hasAudio = audio != nil
    }
}
