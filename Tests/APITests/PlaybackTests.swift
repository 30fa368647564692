import Foundation
import HTTPTypes
import MomentsModel
import MomentsSupport
import PostgresNIO
import ServiceTestSupport
import Storage
import Testing

@testable import API
@testable import JobStore

/// Playback links (API 1.2) on local storage: URLs this API signs and serves without the token,
/// with byte ranges, as AVPlayer reads them. In process over real PostgreSQL, on a port of its own;
/// the presigned S3 links run through real processes in `MomentsKitEndToEndTests`.
@Suite("Playback links (in process)", .quiet)
struct PlaybackTests {
    static let secret = String(repeating: "k", count: 40)

    @Test("A completed job's details give links that need no token; ranges as asked; tampered or expired links get 403, expired files 410")
    func signedLinks() async throws {
        let settings = ["AUTH_REQUIRED": "true", "PLAYBACK_URL_SECONDS": "120", "URL_SIGNING_SECRET": Self.secret]
        try await InProcessAPI.run(settings, live: true) { api in
            let device = try await api.device()
            let id = try #require(UUID(uuidString: try await api.upload(try InProcessAPI.footage, headers: device).json()["job_id"] as? String ?? ""))
            #expect(try await api.get("/api/v1/jobs/\(id)", headers: device).json()["playback_url"] == nil, "none before completion")

            // The job completes with a highlight (the test footage's bytes) and a poster of known bytes.
            let highlight = try InProcessAPI.footage
            var generator = StatusJSONTests.Generator(state: 41)
            let poster = Data((0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let posterFile = FileManager.default.temporaryDirectory.appendingPathComponent("poster-\(id).jpg")
            try poster.write(to: posterFile)
            defer { try? FileManager.default.removeItem(at: posterFile) }
            try await api.storage.put(key: "results/\(id).mp4", from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
            try await api.storage.put(key: "results/\(id).jpg", from: posterFile, contentType: "image/jpeg")
            try await api.store.client.query(
                """
                UPDATE jobs SET status = 'completed', progress = 100, completed_at = now(), result_key = \("results/\(id).mp4"),
                    poster_key = \("results/\(id).jpg") WHERE id = \(id)
                """, logger: TestServices.logger)

            let asked = Date()
            let details = try await api.get("/api/v1/jobs/\(id)", headers: device).json()
            let video = try #require(details["playback_url"] as? String, "\(details)")
            let image = try #require(details["playback_poster_url"] as? String, "\(details)")
            #expect(details["playback_thumbnails_url"] == nil, "no thumbnails, no link")
            let expires = try #require((details["playback_expires_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            #expect(abs(expires.timeIntervalSince(asked) - 120) < 3, "PLAYBACK_URL_SECONDS from now: \(expires)")
            #expect(video.contains("/api/v1/play/\(id.uuidString.lowercased())/highlight.mp4?expires="), "\(video)")

            // Whole files, without the token.
            let whole = try await api.get(Self.path(video))
            #expect(whole.status == 200 && whole.body == highlight && whole.header("Content-Type") == "video/mp4")
            #expect(whole.header("Accept-Ranges") == "bytes")
            #expect(try await api.get(Self.path(image)).body == poster)

            // Ranges as AVPlayer asks for them, over generated offsets: exactly the bytes asked for.
            let size = highlight.count
            for _ in 0..<60 {
                let start = Int.random(in: 0..<size, using: &generator), length = Int.random(in: 1...70_000, using: &generator)
                let (header, range): (String, ClosedRange<Int>) =
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: ("bytes=\(start)-\(start + length - 1)", start...min(start + length - 1, size - 1))
                    case 1: ("bytes=\(start)-", start...(size - 1))
                    default: ("bytes=-\(length)", max(0, size - length)...(size - 1))
                    }
                let part = try await api.get(Self.path(video), headers: [.range: header])
                #expect(part.status == 206 && part.body == highlight[range], "\(header): \(part.status), \(part.body.count) bytes")
                #expect(part.header("Content-Range") == "bytes \(range.lowerBound)-\(range.upperBound)/\(size)", "\(header)")
            }
            #expect(try await api.get(Self.path(video), headers: [.range: "bytes=\(size)-"]).status == 416)

            // Tampered: another signature, expiry, file or job; or none at all.
            let signature = try #require(video.firstMatch(of: /signature=([0-9a-f]{64})/)?.output.1)
            let flipped = String(signature.dropLast()) + (signature.last == "0" ? "1" : "0")
            let expiresValue = try #require(video.firstMatch(of: /expires=(\d+)/)?.output.1)
            let tampered = [
                video.replacingOccurrences(of: String(signature), with: flipped),
                video.replacingOccurrences(of: "expires=\(expiresValue)", with: "expires=\(Int(expiresValue)! + 3600)"),
                video.replacingOccurrences(of: "highlight.mp4", with: "poster.jpg"),
                video.replacingOccurrences(of: id.uuidString.lowercased(), with: UUID().uuidString.lowercased()),
                String(video.prefix { $0 != "?" }),
            ]
            for link in tampered {
                let refused = try await api.get(Self.path(link))
                let error = try refused.error()
                #expect(error.status == 403 && error.code == "invalid_signature", "\(link): \(error)")
            }
            // Signed under the same secret (another node, or before a restart), but past its time.
            let other = PlaybackLinks(storage: api.storage, lifetime: .seconds(60), secret: Self.secret)
            let job = try #require(try await api.store.job(id))
            let old = try #require(other.links(job, base: "http://localhost", now: Date().addingTimeInterval(-61)))
            let expired = try await api.get(Self.path(old.playbackURL)).error()
            #expect(expired.status == 403 && expired.code == "link_expired", "\(expired)")
            let fresh = try #require(other.links(job, base: "http://localhost"))
            #expect(try await api.get(Self.path(fresh.playbackURL)).status == 200, "the same secret signs for every node")
            // Another secret's links are not this server's.
            let stranger = PlaybackLinks(storage: api.storage, lifetime: .seconds(60), secret: String(repeating: "x", count: 40))
            let foreign = try #require(stranger.links(job, base: "http://localhost"))
            #expect(try await api.get(Self.path(foreign.playbackURL)).error().code == "invalid_signature")

            // Once retention deleted the files, a link that is still in time answers 410.
            try await api.store.client.query("UPDATE jobs SET result_expired_at = now() WHERE id = \(id)", logger: TestServices.logger)
            let gone = try await api.get(Self.path(video)).error()
            #expect(gone.status == 410 && gone.code == "result_expired", "\(gone)")
            #expect(try await api.get("/api/v1/jobs/\(id)", headers: device).json()["playback_url"] == nil)
        }
    }

    @Test("URL_SIGNING_SECRET shorter than 32 characters and PLAYBACK_URL_SECONDS out of range are refused by name")
    func settings() {
        for (name, value) in [("URL_SIGNING_SECRET", "short"), ("PLAYBACK_URL_SECONDS", "10"), ("PLAYBACK_URL_SECONDS", "604801")] {
            let error = #expect(throws: SettingError.self) { try APIConfiguration(environment: Settings([name: value])) }
            #expect(error?.message.contains(name) == true, "\(String(describing: error))")
        }
    }

    /// The path and query of an absolute link, as the test client sends them.
    static func path(_ link: String) -> String {
        guard let url = URL(string: link) else { return link }
        return url.path + (url.query.map { "?\($0)" } ?? "")
    }
}
