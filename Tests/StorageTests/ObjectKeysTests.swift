import Foundation
import Storage
import Testing

/// The one spelling of every object key: each kind in its folder, valid for storage, and naming
/// its job so the retention sweep can find who owns it.
@Suite("Object keys")
struct ObjectKeysTests {
    @Test("Each kind of key sits in its folder, keeps a short extension, and names its job")
    func keys() throws {
        let job = try #require(UUID(uuidString: "8C1D2F3E-0000-4000-8000-00000000ABCD"))
        let name = "8c1d2f3e-0000-4000-8000-00000000abcd"
        #expect(ObjectKey.source(of: job, filename: "IMG_0042.MOV") == "sources/\(name).mov")
        #expect(ObjectKey.directSource(of: job) == "sources/\(name)-direct")
        #expect(ObjectKey.staged(job) == "uploads/\(name)" && ObjectKey.stagedMusic(job) == "uploads/\(name)-music")
        #expect(ObjectKey.result(of: job, attempt: 2) == "results/\(name)-2.mp4")
        #expect(ObjectKey.still(of: job, attempt: 2, .poster) == "results/\(name)-2-poster.jpg")
        #expect(ObjectKey.uploadedMusic(of: job, filename: "our song.m4a") == "music-uploads/\(name)/music.m4a")
        #expect(ObjectKey.libraryTrack(job, filename: "/tmp/Clicks.WAV") == "music/\(name)/track.wav")
        #expect(ObjectKey.libraryTrack(job, filename: "clicks.wav").hasPrefix(ObjectKey.libraryTrackPrefix(job)))
        #expect(ObjectKey.libraryAnalysis(job) == "music/\(name)/analysis.json")
        // An extension that is long, empty or not letters and digits is left out.
        for filename in ["clip", "clip.", "clip.quicktime", "clip.m?v", "clip.mp4 ", "..", "clip.é"] {
            #expect(ObjectKey.source(of: job, filename: filename) == "sources/\(name)", "\(filename)")
        }
        #expect(ObjectKey.job(in: "sources/readme.txt") == nil && ObjectKey.job(in: "nofolder") == nil)
    }

    @Test("For any job and file name, every key is one storage accepts and names the job", arguments: 0..<200)
    func anyName(seed: Int) throws {
        var rng = SplitMix(seed: UInt64(seed))
        let job = UUID()
        let alphabet = Array("abcXYZ019 ._-/\\?#%é😀")
        let filename = String((0..<Int(rng.next() % 24)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
        let keys = [
            ObjectKey.source(of: job, filename: filename), ObjectKey.directSource(of: job), ObjectKey.staged(job),
            ObjectKey.stagedMusic(job), ObjectKey.result(of: job, attempt: Int(rng.next() % 9) + 1),
            ObjectKey.still(of: job, attempt: 1, .thumbnails), ObjectKey.uploadedMusic(of: job, filename: filename),
        ]
        for key in keys {
            #expect(throws: Never.self, "\(key)") { try ObjectKey.validate(key) }
            #expect(ObjectKey.job(in: key) == job, "\(key)")
            #expect(ObjectKey.Folder.allCases.contains { key.hasPrefix($0.rawValue) }, "\(key)")
        }
        #expect(throws: Never.self) { try ObjectKey.validate(ObjectKey.libraryTrack(job, filename: filename)) }
    }

    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
