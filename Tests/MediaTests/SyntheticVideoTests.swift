import Foundation
import Media
import MediaSynth
import ServiceTestSupport
import Testing

/// The fixture writer is the ground truth of every media test: check it says what it wrote.
@Suite("Synthetic footage", .heavy)
struct SyntheticVideoTests {
    func write(_ video: SyntheticVideo, _ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("synth-\(getpid())-\(name)").path
        try video.write(to: path)
        return path
    }

    func packetTimes(_ path: String) throws -> (InputFile, [Double]) {
        let input = try InputFile(path: path)
        let stream = try #require(input.bestStream(.video))
        let packet = Packet()
        var times: [Double] = []
        while try input.read(into: packet) {
            if packet.streamIndex == stream.index { times.append(stream.seconds(packet.pts ?? 0)) }
        }
        return (input, times.sorted())
    }

    @Test("frame count, timing, rotation and pixel shape are as described")
    func roundTrip() throws {
        var video = SyntheticVideo(width: 160, height: 90, frameRate: 25, scenes: [.init(frames: 20), .init(frames: 30)])
        video.rotation = 270
        video.sampleAspectRatio = (4, 3)
        let path = try write(video, "roundtrip.mp4")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (input, times) = try packetTimes(path)
        let stream = try #require(input.bestStream(.video))
        #expect(times.count == 50)
        #expect(zip(times, (0..<50).map(video.time(ofFrame:))).allSatisfy { abs($0 - $1) < 1e-3 })
        #expect(stream.rotation == 270)
        #expect(abs(stream.sampleAspectRatio - 4.0 / 3) < 1e-9)
        #expect(input.bestStream(.audio)?.sampleRate == 48000)
    }

    @Test("variable frame rate: frames alternate 0.75 and 1.25 nominal intervals")
    func variableFrameRate() throws {
        var video = SyntheticVideo(width: 160, height: 90, frameRate: 30, scenes: [.init(frames: 40)])
        video.variableFrameRate = true
        video.audio = nil
        let path = try write(video, "vfr.mkv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (_, times) = try packetTimes(path)
        let intervals = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(times.count == 40)
        // Matroska stores milliseconds: 25 ms and 41.67 ms intervals, to the millisecond.
        #expect(intervals.allSatisfy { abs($0 - 0.025) < 0.0011 || abs($0 - 0.041667) < 0.0011 })
        #expect(Set(intervals.map { ($0 * 1000).rounded() }).count >= 2)
    }

    @Test("audio-only output has no video stream")
    func audioOnly() throws {
        var video = SyntheticVideo(width: 160, height: 90, frameRate: 30, scenes: [.init(frames: 30)])
        video.hasVideo = false
        let path = try write(video, "audio.m4a")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let input = try InputFile(path: path)
        #expect(input.bestStream(.video) == nil)
        #expect(input.bestStream(.audio) != nil)
    }
}
