import Foundation
import MomentsModel
import MomentsSupport
import Testing

@Suite("Leftovers of crashed processes")
struct LeftoversTests {
    @Test("Entries with the prefix untouched for longer than the age go; fresh ones, and anything else, stay")
    func sweep() throws {
        let manager = FileManager.default
        let folder = manager.temporaryDirectory.appendingPathComponent("leftovers-\(UUID().uuidString)")
        try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? manager.removeItem(at: folder) }
        let old = Date().addingTimeInterval(-7200)
        func make(_ name: String, folder isFolder: Bool = false, inner: Date? = nil, at date: Date) throws {
            let url = folder.appendingPathComponent(name)
            if isFolder {
                try manager.createDirectory(at: url, withIntermediateDirectories: true)
                let file = url.appendingPathComponent("source.mov")
                try Data([1, 2, 3]).write(to: file)
                try manager.setAttributes([.modificationDate: inner ?? date], ofItemAtPath: file.path)
            } else {
                try Data([1]).write(to: url)
            }
            try manager.setAttributes([.modificationDate: date], ofItemAtPath: url.path)
        }
        try make("moments-job-dead-1", folder: true, at: old)
        try make("moments-job-live-1", folder: true, inner: Date(), at: old)  // a file inside is being written
        try make("moments-job-fresh-2", folder: true, at: Date())
        try make("moments-upload-dead", at: old)
        try make("someone-elses-file", at: old)

        #expect(Leftovers.remove(in: folder, prefix: "moments-job-", olderThan: 3600) == ["moments-job-dead-1"])
        #expect(Leftovers.remove(in: folder, prefix: "moments-upload-", olderThan: 3600) == ["moments-upload-dead"])
        #expect(
            try manager.contentsOfDirectory(atPath: folder.path).sorted()
                == ["moments-job-fresh-2", "moments-job-live-1", "someone-elses-file"])
        #expect(Leftovers.remove(in: folder.appendingPathComponent("missing"), prefix: "moments-", olderThan: 0).isEmpty)
    }
}
