import FaceDetection
import Foundation
import Media
import MediaSynth
import MediaTestSupport
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Highlights

/// Faces in the analysis and what they steer: footage of eight hand-held scenes of equal motion
/// and sound, every other one with a person facing the camera (person A twice, in the same place;
/// B and C once each), so every expected value follows from where the faces were drawn.
@Suite("People: faces found, and put first", .heavy)
struct PeopleTests {
    /// Scene index → the person in it (nil: scenery). Scenes are 4 s each.
    static let people: [Int: (name: String, face: SyntheticVideo.Face)] = [
        0: ("A", .init(x: 0.3, y: 0.45, size: 0.42, skin: 200)),
        2: ("B", .init(x: 0.68, y: 0.5, size: 0.36, skin: 170)),
        4: ("A", .init(x: 0.3, y: 0.45, size: 0.42, skin: 200)),
        6: ("C", .init(x: 0.5, y: 0.45, size: 0.3, skin: 215)),
    ]
    static let sceneSeconds = 4.0

    static func footage(gop: Int = 30, keyframesOnCuts: Bool = true) -> SyntheticVideo {
        var video = SyntheticVideo(
            width: 320, height: 180, frameRate: 30,
            scenes: (0..<8).map { index in
                // Person A's second scene is the first one filmed again (its look).
                var scene = SyntheticVideo.Scene(frames: 120, camera: .handheld(drift: 0.2, sway: 2), toneHz: 300, look: index == 4 ? 0 : nil)
                if let person = people[index] { scene.faces = [person.face] }
                return scene
            })
        video.gopSize = gop
        if !keyframesOnCuts { video.encoderOptions = SyntheticVideo.phoneX264Options }
        return video
    }

    static func scene(at t: Double) -> Int { min(7, Int(t / sceneSeconds)) }

    /// The seconds wholly inside one scene, a quarter second clear of its cuts.
    static var innerSeconds: [(second: Int, scene: Int)] {
        (0..<32).compactMap { s in
            let scene = Int(Double(s) / sceneSeconds)
            return Double(s) > Double(scene) * sceneSeconds - 1e-9 && Double(s + 1) < Double(scene + 1) * sceneSeconds + 1e-9 ? (s, scene) : nil
        }
    }

    func analysis(
        faces: Result<FaceDetector, FaceCascade.Malformed> = FaceDetector.standard, gop: Int = 30,
        keyframesOnCuts: Bool = true
    ) throws -> Analysis {
        var settings = HighlightSettings()
        settings.scanning.faces = faces
        return try HighlightEngine().analyze(
            input: Fixtures.path("people.mp4", Self.footage(gop: gop, keyframesOnCuts: keyframesOnCuts)), settings: settings)
    }

    /// With half-second GOPs every other keyframe is searched (about one a second), and each
    /// second still gets its faces; told GOPs of 40 s, x264 starts one on each cut, and only
    /// the keyframe of each 4 s scene is searched: its faces are its shot's. Without keyframes on
    /// the cuts, the one GOP is longer than `Settings.longGOP` (no sample runs, every picture
    /// decoded) and the densely decoded pictures are searched, beside the scan.
    @Test(
        "each second gives the number and the largest size of the faces in it; scenery has none",
        arguments: zip([30, 15, 1200, 1200], [true, true, true, false]))
    func perSecond(gop: Int, keyframesOnCuts: Bool) throws {
        let analysis = try analysis(gop: gop, keyframesOnCuts: keyframesOnCuts)
        #expect(analysis.facesUnavailable == nil)
        var seen = 0, missed: [Int] = [], spurious: [Int] = []
        for (second, scene) in Self.innerSeconds {
            let f = analysis.seconds[second]
            if let person = Self.people[scene] {
                seen += 1
                // The detector's square spans about the face's height (the drawn oval is 1.24 times
                // as tall as wide, hair included).
                if f.faces == 1, f.faceSize >= 0.9 * person.face.size, f.faceSize <= 1.5 * person.face.size { continue }
                missed.append(second)
            } else if f.faces > 0 {
                spurious.append(second)
            }
        }
        #expect(
            missed.count <= seen / 10,
            "seconds with a person seen wrongly: \(missed.map { (s: $0, faces: analysis.seconds[$0].faces, size: analysis.seconds[$0].faceSize) })")
        #expect(spurious.isEmpty, "faces in scenery at \(spurious)")
        // The report carries counts and sizes, never where or what.
        let json = try ReportJSON.encoder.encode(AnalysisReport(analysis: analysis, selection: SegmentSelector.select(from: analysis, target: 10)))
        let seconds = try #require((try JSONSerialization.jsonObject(with: json) as? [String: Any])?["seconds"] as? [[String: Any]])
        #expect(seconds.allSatisfy { $0["faces"] is Int && $0["face_size"] is Double })
        #expect(!String(decoding: json, as: UTF8.self).contains("face_box"))
    }

    @Test("a highlight of half people, half scenery of the same motion and sound shows people most of the time, different people first")
    func peopleFirst() throws {
        let analysis = try analysis()
        let selection = SegmentSelector.select(from: analysis, target: 8)
        let shown = selection.segments.reduce(0) { $0 + $1.duration }
        let withPeople = selection.segments.reduce(0.0) { total, segment in
            total + (Self.people[Self.scene(at: (segment.start + segment.end) / 2)] != nil ? segment.duration : 0)
        }
        #expect(withPeople >= 0.8 * shown, "people in \(withPeople) of \(shown) s: \(selection.segments.map { ($0.start, $0.end) })")
        // Three segments of up to 3 s: A, B and C each once, not A twice.
        let rules = SegmentRules(HighlightChoices(maxSegment: 3, maxSegments: 3), target: 9)
        let three = SegmentSelector.select(from: analysis, target: 9, rules: rules).segments
        let names = three.compactMap { Self.people[Self.scene(at: ($0.start + $0.end) / 2)]?.name }
        #expect(names.sorted() == ["A", "B", "C"], "people shown: \(names) in \(three.map { ($0.start, $0.end) })")
        #expect(three.contains { $0.reasons.contains("a face in view") }, "\(three.map(\.reasons))")
    }

    @Test("the same footage without the face cascade: analysed all the same, no faces, and the reason given")
    func withoutCascade() throws {
        let analysis = try analysis(faces: .failure(FaceCascade.Malformed(description: "the face cascade /nowhere could not be read")))
        #expect(analysis.seconds.allSatisfy { $0.faces == 0 && $0.faceSize == 0 })
        let report = AnalysisReport(analysis: analysis, selection: SegmentSelector.select(from: analysis, target: 10))
        #expect(report.facesUnavailable?.contains("/nowhere could not be read") == true)
        #expect(report.text.contains("faces were not looked for"))
        #expect(!SegmentSelector.select(from: analysis, target: 10).segments.isEmpty)
    }

    @Test("the poster shows a face where the highlight has one")
    func posterWithFace() throws {
        let path = try Fixtures.path("people.mp4", Self.footage())
        let analysis = try analysis()
        // A scenery segment and a segment of person B.
        let segments = [
            Segment(start: 4.5, end: 7.5, score: 0, reasons: [], shot: 1),
            Segment(start: 8.5, end: 11.5, score: 0, reasons: [], shot: 2),
        ]
        let geometry = OutputGeometry(info: analysis.info, quality: .high)
        let stills = try Stills(path: path, analysis: analysis, geometry: geometry, cancellation: CancellationFlag()).make(segments)
        #expect(stills.posterTime >= 8.5 && stills.posterTime < 11.5, "poster at \(stills.posterTime)")
    }

    @Test("reframed to 9:16, the window keeps the face in view while the action is elsewhere")
    func reframeKeepsFaces() throws {
        let input = try Fixtures.path("people.mp4", Self.footage())
        let output = Fixtures.scratch().appendingPathComponent("portrait.mp4").path
        var settings = HighlightSettings(duration: 12, quality: .low, choices: HighlightChoices(aspect: .portrait))
        settings.stills = nil
        let report = try HighlightEngine().highlight(input: input, output: output, settings: settings)
        let reframe = try #require(report.reframe)
        var checked = 0
        for point in reframe.path {
            guard let person = Self.people[Self.scene(at: point.time)] else { continue }
            // The oval's sides in pixels of the 320-wide picture (the window is as tall as the picture).
            let half = person.face.size * 180 / 2
            let (left, right) = (person.face.x * 320 - half, person.face.x * 320 + half)
            #expect(
                left >= Double(point.x) - 2 && right <= Double(point.x + reframe.width) + 2,
                "at \(point.time) s the face (\(left)…\(right)) is outside the window (\(point.x)…\(point.x + reframe.width))")
            checked += 1
        }
        #expect(checked > 30)
    }

    @Test("a face in a picture stored on its side (rotation 90°, 180°, 270°) is found upright and placed back where it is stored")
    func rotated() throws {
        let detector = try FaceDetector.standard.get()
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)
        for rotation in [0, 90, 180, 270] {
            // An upright picture with one face, stored turned the other way.
            let picture = Faces.picture(width: 320, height: 240, faces: 1, using: &rng)
            let face = try #require(picture.faces.first)
            let (uw, uh) = (picture.width, picture.height)
            let (w, h) = rotation % 180 == 0 ? (uw, uh) : (uh, uw)
            // The render's own rule for what a viewer sees where (CropPlan.display) agrees.
            for (ux, uy) in [(0, 0), (uw - 1, 0), (5, uh - 1), (uw / 2, uh / 3)] {
                let (x, y) = FaceFinder.stored(ux, uy, width: w, height: h, rotation: rotation)
                let shown = CropPlan.display(x: x, y: y, width: 1, height: 1, frameWidth: w, frameHeight: h, rotation: rotation)
                #expect(shown.x == ux && shown.y == uy, "rotation \(rotation): (\(ux), \(uy)) reads (\(x), \(y)), shown at \(shown)")
            }
            var stored = [UInt8](repeating: 0, count: w * h)
            for uy in 0..<uh {
                for ux in 0..<uw {
                    let (x, y) = FaceFinder.stored(ux, uy, width: w, height: h, rotation: rotation)
                    stored[y * w + x] = picture.luma[uy * uw + ux]
                }
            }
            var scratch: [UInt8] = []
            let found = stored.withUnsafeBufferPointer {
                FaceFinder.faces(in: $0, width: w, height: h, stride: w, rotation: rotation, detector: detector, upright: &scratch)
            }
            try #require(found.count == 1, "seed \(seed), rotation \(rotation): \(found)")
            // The face's centre, upright, mapped to where it is stored.
            let (cx, cy): (Double, Double) =
                switch rotation {
                case 90: (face.y, Double(h) - face.x)
                case 180: (Double(w) - face.x, Double(h) - face.y)
                case 270: (Double(w) - face.y, face.x)
                default: (face.x, face.y)
                }
            let box = found[0]
            #expect(
                abs(box.centreX * Double(w) - cx) < face.size * 0.3 && abs(box.centreY * Double(h) - cy) < face.size * 0.4,
                "rotation \(rotation): found at \(box.centreX * Double(w)), \(box.centreY * Double(h)); drawn at \(cx), \(cy)")
            #expect(box.size * 240 > face.size * 0.9 && box.size * 240 < face.size * 1.5, "\(box.size * 240) for \(face.size)")
        }
    }
}
