import Foundation

extension EditTimeline {
    // MARK: CMX 3600

    /// A CMX 3600 EDL: one cut event per clip, picture and both audio channels (`AA/V`; `V` for a
    /// silent source) from reel `AX` (a file, not a tape), the clip's name and file in comments as
    /// Avid, Premiere and Resolve write them. The record side starts at 00:00:00:00.
    func edl() -> String {
        let drop = dropFrame
        var lines = ["TITLE: \(Self.ascii(name, limit: 70))", "FCM: \(drop ? "DROP FRAME" : "NON-DROP FRAME")", ""]
        var record = 0
        for (index, clip) in frames.enumerated() {
            let times = [clip.source, clip.source + clip.length, record, record + clip.length]
                .map { frameRate.timecode($0, dropFrame: drop) }
            let channels = hasAudio ? "AA/V" : "V"
            lines.append(
                String(
                    format: "%03d  AX       %@ C        %@", index + 1, channels.padding(toLength: 5, withPad: " ", startingAt: 0),
                    times.joined(separator: " ")))
            lines.append("* FROM CLIP NAME: \(Self.ascii(sourceName, limit: 200))")
            // The file: its path, or (a relative reference) its name, for the editor to find.
            let file = sourceURL.hasPrefix("file://") ? URL(string: sourceURL)?.path : sourceURL.removingPercentEncoding
            if let file, !file.isEmpty { lines.append("* FROM FILE: \(Self.ascii(file, limit: 400))") }
            lines.append("")
            record += clip.length
        }
        return lines.joined(separator: "\r\n")
    }

    /// `text` with anything outside printable ASCII replaced (EDL readers expect 7-bit text), cut to `limit`.
    static func ascii(_ text: String, limit: Int) -> String {
        String(String(text.unicodeScalars.map { (32..<127).contains($0.value) ? Character($0) : "_" }).prefix(limit))
    }

    // MARK: FCPXML

    /// An FCPXML 1.10 library: one event, one project whose sequence holds the clips on its primary
    /// storyline as `asset-clip`s of one asset (the source, with its start timecode as its start).
    func fcpxml() -> String {
        let rate = frameRate
        let tcFormat = dropFrame ? "DF" : "NDF"
        let assetStart = timecodeStart
        var format = #"<format id="r1" frameDuration="\#(rate.frameDuration)""#
        if let width, let height { format += #" width="\#(width)" height="\#(height)""# }
        format += "/>"
        let audio = hasAudio ? #" hasAudio="1" audioSources="1" audioChannels="2" audioRate="48000""# : ""
        let total = frames.reduce(0) { $0 + $1.length }
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            "<!DOCTYPE fcpxml>",
            "",
            #"<fcpxml version="1.10">"#,
            "    <resources>",
            "        " + format,
            #"        <asset id="r2" name="\#(Self.xml(sourceName))" start="\#(rate.rational(assetStart))" duration="\#(rate.rational(sourceFrames))" hasVideo="1" format="r1"\#(audio)>"#,
            #"            <media-rep kind="original-media" src="\#(Self.xml(sourceURL))"/>"#,
            "        </asset>",
            "    </resources>",
            "    <library>",
            #"        <event name="Moments">"#,
            #"            <project name="\#(Self.xml(name))">"#,
            #"                <sequence format="r1" duration="\#(rate.rational(total))" tcStart="0s" tcFormat="\#(tcFormat)"\#(hasAudio ? #" audioLayout="stereo" audioRate="48k""# : "")>"#,
            "                    <spine>",
        ]
        var offset = 0
        for clip in frames {
            lines.append(
                #"                        <asset-clip ref="r2" offset="\#(rate.rational(offset))" name="\#(Self.xml(sourceName))" start="\#(rate.rational(clip.source))" duration="\#(rate.rational(clip.length))" format="r1" tcFormat="\#(tcFormat)"/>"#
            )
            offset += clip.length
        }
        lines += [
            "                    </spine>", "                </sequence>", "            </project>", "        </event>", "    </library>",
            "</fcpxml>", "",
        ]
        return lines.joined(separator: "\n")
    }

    /// `text` escaped for an XML attribute value.
    static func xml(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\t": out += "&#9;"
            default:
                // Control characters XML 1.0 cannot hold at all.
                if scalar.value < 32 { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    // MARK: OpenTimelineIO

    /// An OpenTimelineIO timeline (`Timeline.1`): a video track and, with sound, an audio track,
    /// each holding the clips (`Clip.2` with an `ExternalReference.1` to the source) back to back.
    func otio() -> String {
        let rate = frameRate.value
        func time(_ frames: Int) -> [String: Any] { ["OTIO_SCHEMA": "RationalTime.1", "rate": rate, "value": Double(frames)] }
        func range(_ start: Int, _ length: Int) -> [String: Any] {
            ["OTIO_SCHEMA": "TimeRange.1", "start_time": time(start), "duration": time(length)]
        }
        func item(_ schema: String, name: String, _ extra: [String: Any]) -> [String: Any] {
            [
                "OTIO_SCHEMA": schema, "name": name, "metadata": [String: Any](), "effects": [Any](), "markers": [Any](),
                "enabled": true,
            ].merging(extra) { $1 }
        }
        func track(_ kind: String) -> [String: Any] {
            let clips = zip(clips, frames).map { clip, frames -> [String: Any] in
                let reference: [String: Any] = [
                    "OTIO_SCHEMA": "ExternalReference.1", "name": sourceName, "metadata": [String: Any](),
                    "target_url": sourceURL, "available_range": range(timecodeStart, sourceFrames),
                    "available_image_bounds": NSNull(),
                ]
                return item(
                    "Clip.2", name: sourceName,
                    [
                        "source_range": range(frames.source, frames.length),
                        "media_references": ["DEFAULT_MEDIA": reference], "active_media_reference_key": "DEFAULT_MEDIA",
                        "metadata": ["moments": ["source_start_seconds": clip.start, "source_end_seconds": clip.end]],
                    ])
            }
            return item("Track.1", name: kind, ["kind": kind, "source_range": NSNull(), "children": clips])
        }
        let timeline: [String: Any] = [
            "OTIO_SCHEMA": "Timeline.1", "name": name, "global_start_time": time(0),
            "metadata": ["moments": ["source": sourceName, "start_timecode": startTimecode.map { $0 as Any } ?? NSNull()]],
            "tracks": item(
                "Stack.1", name: "tracks",
                [
                    "source_range": NSNull(),
                    "children": [track("Video")] + (hasAudio ? [track("Audio")] : []),
                ]),
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: timeline, options: [.prettyPrinted, .sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
