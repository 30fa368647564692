import Foundation
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

@Suite("Poster and thumbnails", .heavy)
struct StillsTests {
    @Test("the poster skips black and out-of-focus pictures the highlight shows; one thumbnail per segment, each from its own segment")
    func posterAvoidsDarkAndBlur() throws {
        let path = try Fixtures.path("black-opening.mp4", SyntheticVideo.blackOpening)
        let analysis = try HighlightEngine().analyze(input: path)
        // A highlight that shows everything, darkness and blur included.
        let segments = [
            Segment(start: 0, end: 5.5, score: 0, reasons: [], shot: 0),
            Segment(start: 6, end: 14, score: 0, reasons: [], shot: 2),
        ]
        let geometry = OutputGeometry(info: analysis.info, quality: .high)
        let stills = try Stills(path: path, analysis: analysis, geometry: geometry, cancellation: CancellationFlag()).make(segments)
        // The sharp scene is 6–11 s (frames 180–329).
        #expect(stills.posterTime >= 6 && stills.posterTime < 11, "poster at \(stills.posterTime)")
        #expect(stills.thumbnailTimes.count == 2)
        #expect(stills.thumbnailTimes[0] >= 3 && stills.thumbnailTimes[0] < 5.5, "not the black opening: \(stills.thumbnailTimes)")
        #expect(stills.thumbnailTimes[1] >= 6 && stills.thumbnailTimes[1] < 11, "\(stills.thumbnailTimes)")
        #expect(stills.posterSize.width == 320 && stills.posterSize.height == 180)
        #expect(Array(stills.poster.prefix(2)) == [0xFF, 0xD8] && Array(stills.strip.prefix(2)) == [0xFF, 0xD8])
    }

    @Test("a rotated source's poster is upright")
    func rotatedPoster() throws {
        var video = SyntheticVideo.blackOpening
        video.rotation = 90
        // A white bar down the stored picture's left edge: the top edge once turned upright.
        video.orientationMarker = true
        let path = try Fixtures.path("black-opening-rotated.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        let segments = [Segment(start: 6, end: 11, score: 0, reasons: [], shot: 2)]
        let geometry = OutputGeometry(info: analysis.info, quality: .high)
        let stills = try Stills(path: path, analysis: analysis, geometry: geometry, cancellation: CancellationFlag()).make(segments)
        #expect(stills.posterSize.width == 180 && stills.posterSize.height == 320, "\(stills.posterSize)")
        let file = Fixtures.scratch().appendingPathComponent("poster.jpg")
        try stills.poster.write(to: file)
        let size = try TestFootage.pictureSize(file.path)
        #expect(size.width == 180 && size.height == 320, "portrait as stored in the JPEG: \(size)")
        let grey = try TestFootage.grey(file.path, width: 180, height: 320)
        let top = grey.prefix(180 * 8).reduce(0) { $0 + Int($1) } / (180 * 8)
        let bottom = grey.suffix(180 * 8).reduce(0) { $0 + Int($1) } / (180 * 8)
        #expect(top > bottom + 50, "the marker is along the top: top \(top), bottom \(bottom)")
    }

    /// Segments the selection's keyframe snapping leaves a frame or two past a whole second, and
    /// segments too short to keep a frame clear of either edge (30 fps source: a frame is 1/30 s).
    static let frame = 1.0 / 30
    static let edges: [(Double, Double)] = [
        (6, 11), (6, 11 + frame), (6, 11 + 2 * frame), (6 + frame, 11 + 3 * frame),
        (7 - frame, 7 + frame), (7, 7 + frame), (9.5, 9.55),
    ]

    @Test(
        "every segment edge, a frame past a whole second or a segment a frame long, gives stills from inside it",
        arguments: Self.edges)
    func edgesOffWholeSeconds(start: Double, end: Double) throws {
        let path = try Fixtures.path("black-opening.mp4", SyntheticVideo.blackOpening)
        let analysis = try HighlightEngine().analyze(input: path)
        let segments = [Segment(start: 0, end: 2, score: 0, reasons: [], shot: 0), Segment(start: start, end: end, score: 0, reasons: [], shot: 2)]
        let geometry = OutputGeometry(info: analysis.info, quality: .high)
        let stills = try Stills(path: path, analysis: analysis, geometry: geometry, cancellation: CancellationFlag()).make(segments)
        #expect(stills.thumbnailTimes.count == 2)
        for (time, segment) in zip(stills.thumbnailTimes, segments) {
            #expect(time >= segment.start && time < segment.end, "thumbnail at \(time) for \(segment.start)–\(segment.end)")
        }
        #expect(segments.contains { stills.posterTime >= $0.start && stills.posterTime < $0.end }, "poster at \(stills.posterTime)")
    }

    /// 2000 × 32 (a panorama strip), six segments: at its own shape each thumbnail would be 11,520
    /// pixels wide and the strip past the 65,535 a JPEG can hold, so no stills at all.
    @Test("a panorama's thumbnails are squeezed to four heights wide, so the strip is still a JPEG")
    func panoramaStrip() throws {
        var video = Fixtures.clip(codec: "libx264", audio: nil, container: "mp4", frames: 90)
        video.width = 2000
        video.height = 32
        let path = try Fixtures.path("panorama.mp4", video)
        let analysis = try HighlightEngine().analyze(input: path)
        let segments = (0..<6).map { Segment(start: Double($0), end: Double($0) + 0.9, score: 0, reasons: [], shot: $0 < 3 ? 0 : 1) }
        let geometry = OutputGeometry(info: analysis.info, quality: .high)
        let stills = try Stills(path: path, analysis: analysis, geometry: geometry, cancellation: CancellationFlag()).make(segments)
        let file = Fixtures.scratch().appendingPathComponent("strip.jpg")
        try stills.strip.write(to: file)
        let size = try TestFootage.pictureSize(file.path)
        #expect(size.width == 6 * 4 * Stills.thumbnailHeight && size.height == Stills.thumbnailHeight, "\(size)")
    }
}
