import Foundation
import FoundationXML
import Highlights
import MomentsModel
import Timelines

/// What must hold for every case, whatever the source and the settings:
///
/// - the engine ends with a highlight (a generated source is always valid);
/// - the highlight decodes without a single error, has H.264 or (copied) the source's video and
///   AAC 48 kHz stereo, and its sound is as long as its pictures, to within a frame;
/// - its length is the target ±0.5 s when the source is longer by more than that, else at most
///   the source;
/// - its segments are ordered, apart and inside the source, and keep the user's segment choices
///   to within a frame;
/// - at every join sound and picture stay together: each sync mark the source shows and sounds
///   inside a segment flashes where the segments put it and clicks within a frame of its flash;
/// - on the copy path every picture is the source's own, bit for bit;
/// - under `fps=30` a source faster than 33 fps shows every second (third, fourth) picture, evenly,
///   and is encoded; otherwise, and under `fps=source`, every picture its segments cover;
/// - the poster and the thumbnails asked for are JPEGs of the highlight's picture, from inside its
///   segments; every timeline holds one clip per segment at the segment's frames.
public struct PipelineInvariants: Sendable {
    public let run: PipelineRun

    public init(_ run: PipelineRun) {
        self.run = run
    }

    /// Every invariant that does not hold, a sentence each; empty when all hold.
    public func violations(of outcome: PipelineRun.Outcome) -> [String] {
        guard case .made(let report) = outcome else {
            if case .failed(let error) = outcome { return ["the engine failed: \(error.code.rawValue): \(error.message)"] }
            return ["no outcome"]
        }
        var found: [String] = []
        found += segments(report)
        do {
            let output = try MediaInspection(run.output)
            let source = try MediaInspection(run.source, audio: false)
            found += streams(report, output)
            found += lengths(report, output)
            found += marks(report, output: output, source: source)
            found += frameRate(report, output: output)
            if report.render.mode == .copy { found += copiedPictures(report, output: output, source: source) }
        } catch {
            found.append("the highlight could not be inspected: \(error)")
        }
        found += stills(report)
        found += timelines(report)
        return found
    }

    var pipelineCase: PipelineCase { run.pipelineCase }
    /// One frame, nominal, and the longest any frame of the source lasts.
    var frame: Double { pipelineCase.frameInterval }
    var longestFrame: Double { pipelineCase.longestFrameInterval }
    /// Every how many source pictures the highlight shows one: what `fps` asks of this source.
    var pictureStep: Int {
        guard pipelineCase.settings.frameRate == .upTo30, pipelineCase.video.nominalRate > FrameRateChoice.fastestKept else { return 1 }
        return max(2, Int((pipelineCase.video.nominalRate / FrameRateChoice.fastestOutput).rounded(.up)))
    }

    /// Where each segment starts on the highlight's clock.
    func outputStarts(_ segments: [Segment]) -> [Double] {
        var starts: [Double] = []
        var at = 0.0
        for segment in segments {
            starts.append(at)
            at += segment.duration
        }
        return starts
    }

    // MARK: Segments

    func segments(_ report: HighlightReport) -> [String] {
        var found: [String] = []
        let segments = report.segments
        let duration = report.input.duration
        if segments.isEmpty { found.append("no segment was selected") }
        for (index, segment) in segments.enumerated() {
            let name = String(format: "segment %d (%.3f–%.3f s)", index, segment.start, segment.end)
            if !(segment.end > segment.start) { found.append("\(name) is empty or reversed") }
            if segment.start < -1e-6 || segment.end > duration + longestFrame + 1e-6 {
                found.append(String(format: "%@ is outside the source (0–%.3f s)", name, duration))
            }
            if index > 0, segment.start < segments[index - 1].end - 1e-6 { found.append("\(name) overlaps the one before") }
            let slack = longestFrame * 1.01 + 1e-6
            if let minimum = pipelineCase.minSegment, segment.duration < minimum - slack, duration >= minimum {
                found.append(String(format: "%@ is shorter than min_segment %.1f s", name, minimum))
            }
            if let maximum = pipelineCase.maxSegment, segment.duration > maximum + slack {
                found.append(String(format: "%@ is longer than max_segment %.1f s", name, maximum))
            }
        }
        if let count = pipelineCase.maxSegments, segments.count > count {
            found.append("\(segments.count) segments, more than max_segments \(count)")
        }
        return found
    }

    // MARK: Streams and lengths

    func streams(_ report: HighlightReport, _ output: MediaInspection) -> [String] {
        var found = output.errors.prefix(5).map { "decoding the highlight reported an error: \($0)" }
        guard let video = output.video else { return found + ["the highlight has no video stream"] }
        let codec = report.render.mode == .copy ? report.input.videoCodec : "h264"
        if video["codec_name"] != codec { found.append("the highlight's video is \(video["codec_name"] ?? "?"), not \(codec)") }
        if codec == "hevc" && video["codec_tag_string"] != "hvc1" {
            found.append("copied HEVC is tagged \(video["codec_tag_string"] ?? "?"), not hvc1")
        }
        if let audio = output.sound {
            if audio["codec_name"] != "aac" || audio["sample_rate"] != "48000" || audio["channels"] != "2" {
                found.append(
                    "the highlight's sound is \(audio["codec_name"] ?? "?") \(audio["sample_rate"] ?? "?") Hz \(audio["channels"] ?? "?") ch, not AAC 48 kHz stereo"
                )
            }
        } else {
            found.append("the highlight has no sound track")
        }
        if output.pictures.isEmpty { found.append("the highlight decodes to no picture") }
        // Picture and sound start together, at the start.
        let videoStart = Double(video["start_time"] ?? "") ?? 0, audioStart = Double(output.sound?["start_time"] ?? "") ?? 0
        if abs(videoStart) > 0.001 || abs(audioStart) > 0.001 {
            found.append(String(format: "the highlight's pictures start at %.3f s and its sound at %.3f s, not at 0", videoStart, audioStart))
        }
        if zip(output.pictures, output.pictures.dropFirst()).contains(where: { $1.time <= $0.time }) {
            found.append("the highlight's pictures do not rise in time")
        }
        return found
    }

    func lengths(_ report: HighlightReport, _ output: MediaInspection) -> [String] {
        var found: [String] = []
        let total = report.segments.reduce(0) { $0 + $1.duration }
        let video = Double(output.video?["duration"] ?? "") ?? 0
        let audio = Double(output.sound?["duration"] ?? "") ?? 0
        let tolerance = longestFrame * Double(pictureStep) + 0.001
        if abs(video - audio) > tolerance {
            found.append(String(format: "sound (%.3f s) and pictures (%.3f s) differ by more than a frame", audio, video))
        }
        if abs(video - total) > tolerance {
            found.append(String(format: "the pictures last %.3f s, the segments %.3f s", video, total))
        }
        if abs(report.output.duration - total) > 0.001 {
            found.append(String(format: "the report says %.3f s, the segments add up to %.3f s", report.output.duration, total))
        }
        let target = pipelineCase.target
        // A source within the tolerance of the target is shown whole, less what is unusable.
        if report.input.duration > target + SegmentSelector.tolerance {
            if abs(total - target) > SegmentSelector.tolerance + 0.001 {
                found.append(
                    String(
                        format: "%.3f s from a %.3f s source, not the %.0f s target ±%.1f s", total, report.input.duration,
                        target, SegmentSelector.tolerance))
            }
        } else if total > report.input.duration + tolerance {
            found.append(String(format: "%.3f s from a %.3f s source, longer than the source", total, report.input.duration))
        }
        return found
    }

    // MARK: Sync marks

    /// Every mark the source shows (a flash the detector sees in the source) and sounds (the sound
    /// lasts past it), inside a segment by two of the highlight's pictures, flashes in the highlight
    /// where the segments put it, and its click sounds within a frame of that flash.
    func marks(_ report: HighlightReport, output: MediaInspection, source: MediaInspection) -> [String] {
        guard let sourceStart = source.pictures.first?.time, let outputStart = output.pictures.first?.time else { return [] }
        let sourceFlashes = source.flashes().map { source.pictures[$0].time - sourceStart }
        let outputFlashes = output.flashes().map { output.pictures[$0].time }
        let clicks = output.clicks()
        let video = pipelineCase.video
        let audible = pipelineCase.audio == "none" ? 0 : (pipelineCase.audioSeconds ?? .infinity) - 0.02
        var found: [String] = []
        // A flash is seen against the pictures either side of it, so the mark stays two of the
        // highlight's pictures inside its segment (under fps=30 a picture is `pictureStep` frames).
        let margin = 2 * frame * Double(pictureStep)
        for (segment, start) in zip(report.segments, outputStarts(report.segments)) {
            for mark in video.syncMarkTimes where mark >= segment.start + margin && mark <= segment.end - margin {
                guard sourceFlashes.contains(where: { abs($0 - mark) < frame / 2 }) else { continue }
                let expected = outputStart + start + (mark - segment.start)
                // Under fps=30 the mark's own picture may be one the highlight leaves out.
                if pictureStep > 1, !output.pictures.contains(where: { abs($0.time - expected) < frame / 2 }) { continue }
                guard let flash = Self.nearest(outputFlashes, to: expected), abs(flash - expected) <= frame + 0.001 else {
                    found.append(String(format: "the mark at %.3f s in the source does not flash at %.3f s in the highlight", mark, expected))
                    continue
                }
                guard mark < audible else { continue }
                guard let click = Self.nearest(clicks, to: flash), abs(click - flash) <= frame + 0.001 else {
                    let near = Self.nearest(clicks, to: flash).map { String(format: "%.3f s", $0) } ?? "none"
                    found.append(
                        String(
                            format: "the mark at %.3f s in the source flashes at %.3f s but clicks at %@ (a frame is %.3f s)",
                            mark, flash, near, frame))
                    continue
                }
            }
        }
        return Array(found.prefix(5)) + (found.count > 5 ? ["… and \(found.count - 5) more marks"] : [])
    }

    // MARK: Frame rate

    /// The report states the step `fps` asks for; inside each segment of an encoded highlight the
    /// pictures come every `step` source frames (a low-light run's longer frames allowed). The copy
    /// path's pictures are checked one by one (`copiedPictures`).
    func frameRate(_ report: HighlightReport, output: MediaInspection) -> [String] {
        var found: [String] = []
        let step = pictureStep
        if report.render.pictureStep != step {
            found.append(
                "the highlight shows every \(report.render.pictureStep) source pictures; fps \(pipelineCase.fps ?? "source") of a "
                    + String(format: "%.3f fps source asks for every %d", pipelineCase.video.nominalRate, step))
        }
        if step > 1 && report.render.mode == .copy { found.append("fps=30 of a faster source was copied, every picture kept") }
        let skipped = report.render.skippedPictures
        if skipped < 0 || skipped > report.totalFrames || (report.render.mode == .copy && skipped != 0) {
            found.append(
                "the report says \(skipped) of the source's \(report.totalFrames) pictures were not decoded for a \(report.render.mode.rawValue)")
        }
        guard report.render.mode == .encode, let outputStart = output.pictures.first?.time else { return found }
        let starts = outputStarts(report.segments)
        // A segment's first picture may be stored a tick before its start (the file's time base rounds it).
        func segment(_ time: Double) -> Int? { starts.lastIndex { $0 <= time + frame / 2 } }
        var gaps: [String] = []
        for (this, next) in zip(output.pictures, output.pictures.dropFirst()) {
            let (t, u) = (this.time - outputStart, next.time - outputStart)
            // Only gaps inside one segment: a join may come at any picture.
            guard let k = segment(t), k == segment(u) else { continue }
            let gap = u - t
            if gap < Double(step) * frame - frame / 2 || gap > Double(step) * longestFrame + frame / 2 {
                gaps.append(String(format: "%.3f → %.3f s (%.1f ms)", t, u, gap * 1000))
            }
        }
        if !gaps.isEmpty {
            found.append(
                String(format: "pictures not every %d source frames (%.1f ms): ", step, Double(step) * frame * 1000)
                    + gaps.prefix(3).joined(separator: ", ") + (gaps.count > 3 ? " … and \(gaps.count - 3) more" : ""))
        }
        return found
    }

    static func nearest(_ values: [Double], to target: Double) -> Double? {
        values.min { abs($0 - target) < abs($1 - target) }
    }

    // MARK: Copy path

    /// Each picture of a copied highlight is the source's picture at the time its segment shows,
    /// and the segments show all of them.
    func copiedPictures(_ report: HighlightReport, output: MediaInspection, source: MediaInspection) -> [String] {
        guard let sourceStart = source.pictures.first?.time, let outputStart = output.pictures.first?.time else { return [] }
        let sourceTimes = source.pictures.map { $0.time - sourceStart }
        let starts = outputStarts(report.segments)
        var mismatched: [String] = []
        var shown = 0
        for picture in output.pictures {
            let t = picture.time - outputStart
            guard let k = starts.lastIndex(where: { $0 <= t + 1e-6 }) else { continue }
            let sourceTime = report.segments[k].start + (t - starts[k])
            guard let index = Self.nearestIndex(sourceTimes, to: sourceTime), abs(sourceTimes[index] - sourceTime) < frame / 2 else {
                mismatched.append(String(format: "%.3f s (source %.3f s): no source picture there", t, sourceTime))
                continue
            }
            shown += 1
            if source.pictures[index].checksum != picture.checksum {
                mismatched.append(String(format: "%.3f s (source %.3f s): not the source's picture", t, sourceTime))
            }
        }
        let expected = report.segments.reduce(0) { count, segment in
            count + sourceTimes.filter { $0 >= segment.start - 1e-6 && $0 < segment.end - 1e-6 }.count
        }
        var found = mismatched.prefix(3).map { "copied picture at \($0)" }
        if mismatched.count > 3 { found.append("… and \(mismatched.count - 3) more copied pictures") }
        if shown != expected { found.append("the copy shows \(shown) of the \(expected) source pictures its segments cover") }
        return found
    }

    static func nearestIndex(_ sorted: [Double], to target: Double) -> Int? {
        guard !sorted.isEmpty else { return nil }
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < target { lo = mid + 1 } else { hi = mid }
        }
        if lo == sorted.count { return lo - 1 }
        return lo > 0 && target - sorted[lo - 1] < sorted[lo] - target ? lo - 1 : lo
    }

    // MARK: Stills

    func stills(_ report: HighlightReport) -> [String] {
        let fm = FileManager.default
        var found: [String] = []
        let wanted = pipelineCase.poster || pipelineCase.thumbnails
        guard wanted else {
            if fm.fileExists(atPath: run.poster) || fm.fileExists(atPath: run.thumbnails) { found.append("stills were written unasked") }
            return found
        }
        guard let stills = report.stills else { return ["the poster and thumbnails asked for were not made"] }
        func inside(_ time: Double, _ segment: Segment) -> Bool { time >= segment.start - 1e-6 && time < segment.end + 1e-6 }
        if pipelineCase.poster {
            if let size = Self.jpegSize(run.poster) {
                if size.width != stills.posterWidth || size.height != stills.posterHeight {
                    found.append("the poster is \(size.width)×\(size.height), the report says \(stills.posterWidth)×\(stills.posterHeight)")
                }
                if size.width != report.output.width || size.height != report.output.height {
                    found.append("the poster is \(size.width)×\(size.height), the highlight \(report.output.width)×\(report.output.height)")
                }
            } else {
                found.append("the poster is missing or not a JPEG")
            }
            if !report.segments.contains(where: { inside(stills.posterTime, $0) }) {
                found.append(String(format: "the poster shows %.3f s, outside every segment", stills.posterTime))
            }
        } else if fm.fileExists(atPath: run.poster) {
            found.append("a poster was written unasked")
        }
        if pipelineCase.thumbnails {
            if let size = Self.jpegSize(run.thumbnails) {
                let count = max(1, report.segments.count)
                let each = size.width / count
                let shape = Double(report.output.width) / Double(max(1, report.output.height))
                let expected = min(Double(HighlightReport.Stills.widestThumbnail), shape * Double(size.height))
                if size.height != HighlightReport.Stills.thumbnailHeight || size.width % count != 0 || abs(Double(each) - expected) > 2.5 {
                    found.append(
                        "the thumbnail strip is \(size.width)×\(size.height) for \(count) segments of a \(report.output.width)×\(report.output.height) highlight"
                    )
                }
            } else {
                found.append("the thumbnail strip is missing or not a JPEG")
            }
            if stills.thumbnailTimes.count != report.segments.count {
                found.append("\(stills.thumbnailTimes.count) thumbnails for \(report.segments.count) segments")
            }
            for (time, segment) in zip(stills.thumbnailTimes, report.segments) where !inside(time, segment) {
                found.append(String(format: "a thumbnail shows %.3f s, outside its segment %.3f–%.3f s", time, segment.start, segment.end))
            }
        } else if fm.fileExists(atPath: run.thumbnails) {
            found.append("thumbnails were written unasked")
        }
        return found
    }

    static func jpegSize(_ path: String) -> (width: Int, height: Int)? {
        guard let probe = try? Tool.run("ffprobe", ["-v", "error", "-show_streams", path]), probe.status == 0 else { return nil }
        let (streams, _) = MediaInspection.sections(String(decoding: probe.output, as: UTF8.self))
        guard let stream = streams.first, stream["codec_name"] == "mjpeg",
            let width = Int(stream["width"] ?? ""), let height = Int(stream["height"] ?? "")
        else { return nil }
        return (width, height)
    }

    // MARK: Timelines

    /// Each format holds one clip per segment, at the frames the segment starts on, back to back.
    func timelines(_ report: HighlightReport) -> [String] {
        let timeline = PipelineRun.timeline(of: report, source: run.source)
        let rate = timeline.frameRate
        let first = report.input.startTimecode.flatMap { rate.frames(timecode: $0) } ?? 0
        let starts = report.segments.map { first + rate.frames($0.start) }
        var found: [String] = []
        for format in TimelineFormat.allCases {
            guard let text = try? String(contentsOfFile: run.timeline(format), encoding: .utf8) else {
                found.append("no \(format.rawValue) timeline")
                continue
            }
            let clipStarts: [Int]?
            switch format {
            case .edl: clipStarts = Self.edlStarts(text, rate: rate)
            case .fcpxml: clipStarts = Self.fcpxmlStarts(text, rate: rate)
            case .otio: clipStarts = Self.otioStarts(text)
            }
            guard let clipStarts else {
                found.append("the \(format.rawValue) timeline does not read back")
                continue
            }
            if clipStarts != starts {
                found.append("the \(format.rawValue) timeline's clips start at frames \(clipStarts.prefix(6)), the segments at \(starts.prefix(6))")
            }
        }
        return found
    }

    /// The source frames of an EDL's events, whose record sides must run back to back.
    static func edlStarts(_ text: String, rate: FrameRate) -> [Int]? {
        var starts: [Int] = []
        var record = 0
        for line in text.split(whereSeparator: \.isNewline) where line.first?.isNumber == true {
            let fields = line.split(separator: " ")
            guard fields.count >= 8 else { return nil }
            let times = fields.suffix(4).map { rate.frames(timecode: String($0)) }
            guard let sourceIn = times[0], let sourceOut = times[1], let recordIn = times[2], let recordOut = times[3],
                recordIn == record, sourceOut - sourceIn == recordOut - recordIn, sourceOut > sourceIn
            else { return nil }
            starts.append(sourceIn)
            record = recordOut
        }
        return starts
    }

    /// The `start` of each `asset-clip` of an FCPXML document (well-formed, or nil), in frames.
    static func fcpxmlStarts(_ text: String, rate: FrameRate) -> [Int]? {
        guard let document = try? XMLDocument(xmlString: text, options: []),
            let clips = try? document.nodes(forXPath: "//asset-clip") as? [XMLElement]
        else { return nil }
        return clips.compactMap { clip in
            guard let start = clip.attribute(forName: "start")?.stringValue else { return nil }
            return Self.frames(fcpxmlTime: start, rate: rate)
        }
    }

    /// `n/ds` or `ns` as frames of `rate`.
    static func frames(fcpxmlTime: String, rate: FrameRate) -> Int? {
        guard fcpxmlTime.hasSuffix("s") else { return nil }
        let parts = fcpxmlTime.dropLast().split(separator: "/").compactMap { Double($0) }
        guard let numerator = parts.first else { return nil }
        let seconds = parts.count == 2 ? numerator / parts[1] : numerator
        return Int((seconds * rate.value).rounded())
    }

    /// The video track's clips' source start frames in an OTIO document.
    static func otioStarts(_ text: String) -> [Int]? {
        guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let stack = json["tracks"] as? [String: Any], let tracks = stack["children"] as? [[String: Any]],
            let video = tracks.first, let clips = video["children"] as? [[String: Any]]
        else { return nil }
        return clips.compactMap { clip in
            guard let range = clip["source_range"] as? [String: Any], let start = range["start_time"] as? [String: Any],
                let value = start["value"] as? Double
            else { return nil }
            return Int(value.rounded())
        }
    }
}
