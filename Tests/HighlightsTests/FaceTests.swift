import FaceDetection
import Foundation
import MediaSynth
import MediaTestSupport
import Testing

@testable import Highlights

/// The face detector on pictures drawn here (faces at known places and sizes over backgrounds
/// with none), new seeds every run, and on cascade files that are not what they should be.
@Suite("Faces: found where they are, and nowhere else")
struct FaceTests {
    static let cascade: FaceCascade? = try? FaceCascade(contentsOf: FaceCascade.standardPath)

    static func seeds(_ count: Int) -> [UInt64] {
        if let listed = Seeds.replayed("MOMENTS_FACE_SEED") { return listed }
        var rng = SystemRandomNumberGenerator()
        let factor = ProcessInfo.processInfo.environment["MOMENTS_FACE_SEEDS"].flatMap(Int.init) ?? 1
        return (0..<count * max(1, factor)).map { _ in rng.next() }
    }

    static func detect(_ picture: Faces.Picture, with cascade: FaceCascade) -> [DetectedFace] {
        picture.luma.withUnsafeBufferPointer {
            FaceDetector(cascade: cascade).faces(in: $0, width: picture.width, height: picture.height, stride: picture.width)
        }
    }

    @Test("the cascade Debian's opencv-data ships is read whole: 25 stages over a 24 × 24 window")
    func standardCascade() throws {
        let cascade = try #require(Self.cascade, "opencv-data's cascade at \(FaceCascade.standardPath) (scripts/setup installs it)")
        #expect(cascade.width == 24 && cascade.height == 24 && cascade.stages.count == 25)
        // Every feature is one a stump uses, and each has two or three rectangles.
        #expect(cascade.features.allSatisfy { (2...3).contains($0.count) })
        #expect(Set(cascade.stages.flatMap { $0.stumps.map(\.feature) }).count == cascade.features.count)
    }

    @Test("a cascade file that is cut short, names a missing feature or holds trees is refused with the reason")
    func malformed() throws {
        let text = try String(contentsOfFile: FaceCascade.standardPath, encoding: .utf8)
        let cut = String(text.prefix(text.count / 2))
        #expect(throws: FaceCascade.Malformed.self) { try FaceCascade(xml: cut) }
        #expect(throws: FaceCascade.Malformed.self) { try FaceCascade(xml: text.replacingOccurrences(of: "<features>", with: "<unused>")) }
        let tree = text.replacingOccurrences(of: "<internalNodes>\n            0 -1 0 ", with: "<internalNodes>\n            1 2 0 ")
        #expect(tree != text)
        #expect(throws: FaceCascade.Malformed.self) { try FaceCascade(xml: tree) }
        #expect(throws: FaceCascade.Malformed.self) { try FaceCascade(xml: "<opencv_storage></opencv_storage>") }
        #expect(throws: FaceCascade.Malformed.self) { try FaceCascade(xml: "") }
    }

    @Test("drawn faces of every size and tone are found on their places; backgrounds with none give none")
    func found() throws {
        let cascade = try #require(Self.cascade)
        var drawn = 0, found = 0, spurious = 0
        var misses: [String] = []
        for seed in Self.seeds(24) {
            var rng = SplitMix64(seed: seed)
            let (width, height) = [(320, 180), (480, 270), (360, 640), (640, 360)].randomElement(using: &rng)!
            let picture = Faces.picture(width: width, height: height, faces: Int.random(in: 0...3, using: &rng), using: &rng)
            let faces = Self.detect(picture, with: cascade)
            drawn += picture.faces.count
            // A face is found when a detection's centre lies within a quarter of its width of the
            // drawn face's eyes-and-mouth box centre and its size is within 40 %.
            func matches(_ d: DetectedFace, _ f: (x: Double, y: Double, size: Double)) -> Bool {
                abs(d.centreX - f.x) < 0.25 * f.size && abs(d.centreY - f.y) < 0.3 * f.size && abs(d.size / f.size - 1) < 0.4
            }
            let hits = picture.faces.filter { f in faces.contains { matches($0, f) } }.count
            let extra = faces.filter { d in !picture.faces.contains { matches(d, $0) } }.count
            found += hits
            spurious += extra
            if hits < picture.faces.count || extra > 0 {
                misses.append(
                    "seed \(seed) \(width)×\(height): drawn \(picture.faces.map { (Int($0.x), Int($0.y), Int($0.size)) }), found \(faces.map { (Int($0.centreX), Int($0.centreY), Int($0.size), $0.neighbours) })"
                )
            }
        }
        print("faces: \(found) of \(drawn) found, \(spurious) spurious")
        #expect(drawn == 0 || Double(found) / Double(drawn) >= 0.9, "\(found) of \(drawn) faces found: \(misses)")
        #expect(spurious <= 1, "\(spurious) detections where no face was drawn: \(misses)")
    }
}
