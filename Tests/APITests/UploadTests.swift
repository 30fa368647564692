import Foundation
import HTTPTypes
import ServiceTestSupport
import Storage
import Testing

/// Both ways in, in process: a multipart upload, and a direct upload (reserve, PUT to storage,
/// start). The end-to-end tests run the same through real processes, S3 and workers.
@Suite("Uploads (in process)", .quiet)
struct UploadTests {
    @Test("An upload in the contract's form is accepted: the job is written, queued, and its source stored")
    func acceptedUpload() async throws {
        try await InProcessAPI.run { api in
            let reply = try await api.upload(
                try InProcessAPI.footage, filename: "IMG_0042.MOV",
                fields: ["target_duration": "8", "quality": "low"])
            #expect(reply.status == 200, "\(reply.text)")
            let body = try reply.json()
            #expect(body["message"] as? String == "Video uploaded, processing started" && body["estimated_time"] is Int)
            let id = try #require(UUID(uuidString: body["job_id"] as? String ?? ""))
            let job = try #require(try await api.store.job(id))
            #expect(job.status == .pending && job.targetDuration == 8 && job.quality == .low && job.originalFilename == "IMG_0042.MOV")
            #expect(try await api.queue.contains([id]) == [true])
            #expect(try await api.storage.head(key: job.sourceKey).size == Int64(try InProcessAPI.footage.count), "the source is stored whole")
            let status = try await api.get("/api/v1/jobs/\(id)/status").json()
            #expect(status["status"] as? String == "pending" && status["progress"] as? Int == 0)
            // The API's probe recorded the source's length: the worker's deadline follows from it, and
            // the status shows it while the job waits (the contract's example does while it runs).
            let length = try TestFootage.duration(TestFootage.twentySeconds)
            #expect(
                abs((job.sourceDuration ?? 0) - length) < 0.1 && abs((status["duration"] as? Double ?? 0) - length) < 0.1,
                "\(String(describing: job.sourceDuration)), \(status)")
            let created = try #require(status["created_at"] as? String)
            #expect(created.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil, "no fractions: \(created)")
        }
    }

    @Test("quality=original: stored with the source's frame rate, its size told up front; fps=30 with it is refused")
    func originalQuality() async throws {
        try await InProcessAPI.run { api in
            let footage = try InProcessAPI.footage
            let reply = try await api.upload(footage, filename: "IMG_0043.MOV", fields: ["target_duration": "10", "quality": "original"])
            #expect(reply.status == 200, "\(reply.text)")
            let body = try reply.json()
            let id = try #require(UUID(uuidString: body["job_id"] as? String ?? ""))
            let job = try #require(try await api.store.job(id))
            #expect(job.quality == .original && job.choices.fps == .source)
            // H.264 in MP4 at its own size is copied: half of the 20 s source's bytes, give or take its sound.
            let size = try #require(body["estimated_size"] as? Int, "\(body)")
            let half = Double(footage.count) / 2
            #expect(abs(Double(size) - half) < 0.1 * half, "\(size) of \(footage.count) bytes")
            let details = try await api.get("/api/v1/jobs/\(id)").json()
            #expect(details["quality"] as? String == "original" && details["fps"] as? String == "source", "\(details)")

            // Encoded sizes: smaller pictures cost fewer bytes.
            var sizes: [String: Int] = [:]
            for quality in ["high", "low"] {
                let answer = try await api.upload(footage, filename: "a.mp4", fields: ["target_duration": "10", "quality": quality, "codec": "h264"])
                sizes[quality] = try answer.json()["estimated_size"] as? Int
            }
            let (low, high) = (sizes["low"] ?? 0, sizes["high"] ?? 0)
            #expect(low > 0 && low <= high, "\(sizes)")

            let refused = try await api.upload(footage, filename: "b.mp4", fields: ["quality": "original", "fps": "30"]).error()
            #expect(refused.status == 422 && refused.code == "invalid_fps" && refused.message.contains("quality=original"), "\(refused)")
            let unknown = try await api.upload(footage, filename: "c.mp4", fields: ["quality": "best"]).error()
            #expect(unknown.status == 422 && unknown.code == "invalid_quality" && unknown.message.contains("original"), "\(unknown)")
        }
    }

    @Test("Direct upload: reserve a signed PUT, start refuses until the object is there, then queues the job once")
    func directUpload() async throws {
        try await InProcessAPI.run(presigning: true) { api in
            let reserve = try await api.post(
                "/api/v1/uploads",
                json: [
                    "filename": "big.mov", "target_duration": 6, "quality": "low",
                    "codec": "h264",
                ])
            #expect(reserve.status == 200, "\(reserve.text)")
            let reserved = try reserve.json()
            let id = try #require(UUID(uuidString: reserved["job_id"] as? String ?? ""))
            let url = try #require(URL(string: reserved["upload_url"] as? String ?? ""))
            #expect(url.host == "storage.test" && url.query?.contains("X-Method=PUT") == true, "\(url)")
            #expect(try await api.store.job(id) == nil, "a reservation is not a job yet")

            let early = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(early.status == 409 && early.code == "upload_missing")

            // What the app's PUT to the signed URL does.
            let key = String(url.path.dropFirst())
            _ = try await api.storage.put(key: key, from: URL(fileURLWithPath: TestFootage.twentySeconds), contentType: "video/mp4")
            let started = try await api.send(.post, "/api/v1/jobs/\(id)/start")
            let startedID = try started.json()["job_id"] as? String
            #expect(started.status == 200 && startedID == id.uuidString.lowercased(), "\(started.text)")
            #expect(try await api.send(.post, "/api/v1/jobs/\(id)/start").status == 200, "starting twice is harmless")
            #expect(try await api.queue.contains([id]) == [true])
            #expect(try await api.queue.stats().ready == 1, "queued once")
            let details = try await api.get("/api/v1/jobs/\(id)").json()
            #expect(details["original_filename"] as? String == "big.mov" && details["target_duration"] as? Double == 6)
            #expect(details["codec"] as? String == "h264" && details["quality"] as? String == "low")

            // The job reads a copy under a key no URL names; the staged upload is gone, and a PUT
            // after the start (the URL is still valid) changes nothing the job reads.
            let job = try #require(try await api.store.job(id))
            let footageSize = Int64(try InProcessAPI.footage.count)
            #expect(job.sourceKey != key && job.sourceSize == footageSize)
            #expect(try await api.storage.head(key: job.sourceKey).size == job.sourceSize)
            let staged = await #expect(throws: StorageError.self) { try await api.storage.head(key: key) }
            #expect(staged?.code == .notFound)
            _ = try await api.storage.put(key: key, from: URL(fileURLWithPath: "/etc/hostname"), contentType: "video/mp4")
            #expect(try await api.storage.head(key: job.sourceKey).size == job.sourceSize)
        }
    }

    @Test(
        "Direct upload with a track of the app's own: a second signed PUT of the declared length; each fault refused with its code; the track moves under the job"
    )
    func directUploadMusic() async throws {
        try await InProcessAPI.run(presigning: true) { api in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-direct-music-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let track = folder.appendingPathComponent("song.wav")
            let made = try captured("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=12", track.path])
            #expect(made.status == 0)
            let trackSize = Int64(try Data(contentsOf: track).count)

            // Refused at the reservation: no length, too long, a length alone, a library track too.
            for (body, status, code) in [
                (["music_filename": "song.wav"] as [String: Any], 400, "invalid_request"),
                (["music_filename": "song.wav", "music_size_bytes": 0], 400, "invalid_request"),
                (["music_filename": "song.wav", "music_size_bytes": 65 << 20], 413, "music_too_large"),
                (["music_size_bytes": 1000], 400, "invalid_request"),
                (["music_filename": "song.wav", "music_size_bytes": 1000, "music_id": UUID().uuidString], 422, "invalid_music_id"),
            ] {
                let error = try await api.post("/api/v1/uploads", json: body).error()
                #expect(error.status == status && error.code == code, "\(body): \(error)")
            }

            let reserved = try await api.post(
                "/api/v1/uploads",
                json: [
                    "filename": "clip.mov", "music_filename": "../song.wav",
                    "music_size_bytes": trackSize, "music_volume": -9,
                ]
            ).json()
            let id = try #require(UUID(uuidString: reserved["job_id"] as? String ?? ""))
            let videoURL = try #require(URL(string: reserved["upload_url"] as? String ?? ""))
            let musicURL = try #require(URL(string: reserved["music_upload_url"] as? String ?? ""), "\(reserved)")
            #expect(musicURL.path != videoURL.path && musicURL.query?.contains("X-Content-Length=\(trackSize)") == true, "\(musicURL)")
            _ = try await api.storage.put(
                key: String(videoURL.path.dropFirst()), from: URL(fileURLWithPath: TestFootage.twentySeconds),
                contentType: "video/mp4")
            let missing = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(missing.status == 409 && missing.code == "music_missing", "\(missing)")
            // A text file where the track should be: 415, and the start can be asked again once the track is there.
            let text = folder.appendingPathComponent("notes.txt")
            try Data(repeating: UInt8(ascii: "x"), count: Int(trackSize)).write(to: text)
            let musicKey = String(musicURL.path.dropFirst())
            _ = try await api.storage.put(key: musicKey, from: text, contentType: "audio/wav")
            let notAudio = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(notAudio.status == 415 && notAudio.code == "not_audio", "\(notAudio)")
            #expect(try await api.store.job(id) == nil, "no job yet")
            _ = try await api.storage.put(key: musicKey, from: URL(fileURLWithPath: "/etc/hostname"), contentType: "audio/wav")
            let short = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(short.status == 400 && short.code == "upload_size_mismatch", "\(short)")
            _ = try await api.storage.put(key: musicKey, from: track, contentType: "audio/wav")
            let started = try await api.send(.post, "/api/v1/jobs/\(id)/start")
            #expect(started.status == 200, "\(started.text)")

            let job = try #require(try await api.store.job(id))
            #expect(
                abs((job.sourceDuration ?? 0) - (try TestFootage.duration(TestFootage.twentySeconds))) < 0.1, "the start's probe recorded the length")
            let music = try #require(job.music)
            #expect(music.filename == "song.wav" && music.trackID == nil && music.volume == -9 && music.keepSourceAudio)
            let kept = try #require(music.uploadedKey)
            #expect(kept.hasPrefix("music-uploads/\(id.uuidString.lowercased())/") && kept.hasSuffix(".wav"), "\(kept)")
            #expect(try await api.storage.head(key: kept).size == trackSize)
            let staged = await #expect(throws: StorageError.self) { try await api.storage.head(key: musicKey) }
            #expect(staged?.code == .notFound, "the staged track is gone once the job is committed")
            let details = try await api.get("/api/v1/jobs/\(id)").json()
            #expect(details["music_filename"] as? String == "song.wav" && details["music_volume"] as? Double == -9, "\(details)")
        }
    }

    @Test(
        "Direct upload checks at start: the declared size is signed into the URL and must match; a file that is no video is refused 415 and its copy deleted"
    )
    func directUploadChecks() async throws {
        try await InProcessAPI.run(presigning: true) { api in
            let footage = URL(fileURLWithPath: TestFootage.twentySeconds)
            let size = try InProcessAPI.footage.count
            let tooBig = try await api.post("/api/v1/uploads", json: ["size_bytes": 3 << 30]).error()
            #expect(tooBig.status == 413 && tooBig.code == "file_too_large")
            let zero = try await api.post("/api/v1/uploads", json: ["size_bytes": 0]).error()
            #expect(zero.status == 400 && zero.code == "invalid_request")

            let declared = try await api.post("/api/v1/uploads", json: ["filename": "clip.mov", "size_bytes": size + 1]).json()
            let url = try #require(URL(string: declared["upload_url"] as? String ?? ""))
            #expect(url.query?.contains("X-Content-Length=\(size + 1)") == true, "the length is part of the signature: \(url)")
            _ = try await api.storage.put(key: String(url.path.dropFirst()), from: footage, contentType: "video/mp4")
            let id = try #require(declared["job_id"] as? String)
            let mismatch = try await api.send(.post, "/api/v1/jobs/\(id)/start").error()
            #expect(mismatch.status == 400 && mismatch.code == "upload_size_mismatch", "\(mismatch)")

            let text = FileManager.default.temporaryDirectory.appendingPathComponent("moments-list-\(UUID()).mov")
            try Data(repeating: UInt8(ascii: "x"), count: 5000).write(to: text)
            defer { try? FileManager.default.removeItem(at: text) }
            let reserved = try await api.post("/api/v1/uploads", json: ["filename": "list.mov", "size_bytes": 5000]).json()
            let textURL = try #require(URL(string: reserved["upload_url"] as? String ?? ""))
            _ = try await api.storage.put(key: String(textURL.path.dropFirst()), from: text, contentType: "video/mp4")
            let textID = try #require(reserved["job_id"] as? String)
            let refused = try await api.send(.post, "/api/v1/jobs/\(textID)/start").error()
            #expect(refused.status == 415 && refused.code == "not_a_video", "\(refused)")
            #expect(try await api.store.job(try #require(UUID(uuidString: textID))) == nil, "no job")
            let objects = try FileManager.default.subpathsOfDirectory(atPath: api.storage.root.path).filter { !$0.hasSuffix("/") }
            #expect(!objects.contains { $0.hasPrefix("sources/") && $0.contains(textID) }, "the refused copy is deleted: \(objects)")
        }
    }
}
