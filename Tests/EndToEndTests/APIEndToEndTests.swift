import Foundation
import ServiceTestSupport
import Testing

@testable import JobStore

/// The running system as the iOS app sees it: `moments api` and two `moments worker` processes
/// against real PostgreSQL, Redis and SeaweedFS, driven over HTTP with multipart uploads that
/// always declare `video/mp4`.
@Suite("API end to end (real processes and servers)", .serialized, .heavy)
struct APIEndToEndTests {
    typealias System = LiveSystem

    @Test("Upload → poll status → download: the contract's fields and formats, a playable highlight of the asked length")
    func happyPath() async throws {
        try await System.withSystem(settings: ["AUTH_REQUIRED": "true"]) { base in
            let auth = try CurlAPI.device(base)
            let upload = try curl(
                auth + [
                    "-F", "file=@\(TestFootage.twentySeconds);filename=IMG_0042.MOV;type=video/mp4",
                    "-F", "target_duration=8", "-F", "quality=low", "\(base)/api/v1/upload",
                ])
            #expect(upload.status == 200, "\(upload.body)")
            let accepted = try CurlAPI.json(upload.body)
            let id = try #require(accepted["job_id"] as? String)
            #expect(accepted["message"] as? String == "Video uploaded, processing started")
            #expect(accepted["estimated_time"] is Int)

            var progress: [Int] = []
            var status: [String: Any] = [:]
            var polls = 0
            let done = try await TestServices.eventually(timeout: .seconds(90)) {
                status = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/jobs/\(id)/status"]).body)
                polls += 1
                if let value = status["progress"] as? Int { progress.append(value) }
                return ["completed", "failed", "cancelled"].contains(status["status"] as? String ?? "")
            }
            #expect(done)
            #expect(status["status"] as? String == "completed", "\(status)")
            #expect(progress == progress.sorted(), "progress never goes backwards: \(progress)")
            for key in [
                "job_id", "status", "progress", "message", "result_url", "created_at", "completed_at", "original_filename",
                "duration", "segments_selected",
            ] {
                #expect(status.keys.contains(key), "status has \(key)")
            }
            let created = try #require(status["created_at"] as? String)
            #expect(created.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) != nil, "no fractions: \(created)")
            #expect(status["original_filename"] as? String == "IMG_0042.MOV")
            #expect(abs((status["duration"] as? Double ?? 0) - 20) < 0.1)
            let resultURL = try #require(status["result_url"] as? String)
            #expect(resultURL == "\(base)/api/v1/jobs/\(id)/download")

            let redirect = try curl(auth + ["-o", "/dev/null", resultURL])
            #expect(redirect.status == 302, "a redirect to a signed storage URL")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("moments-api-\(id).mp4")
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(try curl(auth + ["-L", "-o", file.path, resultURL]).status == 200)
            #expect(abs(try TestFootage.duration(file.path) - 8) <= 0.5)

            let details = try CurlAPI.json(try curl(auth + ["\(base)/api/v1/jobs/\(id)"]).body)
            #expect(details["quality"] as? String == "low" && details["target_duration"] as? Double == 8 && details["attempt"] as? Int == 1)
            #expect(details["codec"] as? String == "auto")
            let segments = try #require(details["segments"] as? [[String: Double]], "\(details)")
            #expect(segments.count == status["segments_selected"] as? Int)
            let shown = segments.reduce(0.0) { $0 + ($1["end"] ?? 0) - ($1["start"] ?? 0) }
            #expect(abs(shown - 8) <= 0.5, "the segments add up to the highlight: \(segments)")
            #expect(segments.allSatisfy { ($0["start"] ?? -1) >= 0 && ($0["end"] ?? 99) <= 20.1 })
            let cancel = try CurlAPI.error(try curl(auth + ["-X", "DELETE", "\(base)/api/v1/jobs/\(id)"]))
            #expect(cancel.status == 409 && cancel.code == "already_finished")

            // Polls answered before the router (StatusPollHandler) count as the router's do.
            #expect(try curl(["-H", "Authorization: Bearer mdt_nobody", "\(base)/api/v1/jobs/\(id)/status"]).status == 401)
            #expect(try curl(["-H", "Authorization: Bearer mdt_nobody", "\(base)/api/v1/jobs/\(id)/status?via=router"]).status == 401)

            let metrics = try curl(["\(base)/metrics"])
            #expect(metrics.status == 200)
            let poll = #"route="/api/v1/jobs/{id}/status",method="GET",status="#
            for line in [
                #"moments_jobs{status="completed"} 1"#, "moments_queue_ready 0", "moments_queue_in_flight 0",
                "moments_completed_last_hour 1",
                #"moments_http_requests_total{route="/api/v1/upload",method="POST",status="200"} 1"#,
                #"moments_http_requests_total{route="/api/v1/jobs/{id}",method="DELETE",status="409"} 1"#,
                #"moments_http_requests_total{\#(poll)"200"} \#(polls)"#,
                #"moments_http_request_duration_seconds_count{\#(poll)"200"} \#(polls)"#,
                #"moments_http_requests_total{\#(poll)"401"} 2"#, #"moments_http_request_errors_total{\#(poll)"401"} 2"#,
            ] {
                #expect(metrics.body.contains(line), "metrics have \(line)")
            }
        }
    }

    @Test("Direct upload: a presigned PUT straight to storage, then start; cancel through the API")
    func directUploadAndCancel() async throws {
        try await System.withSystem { base in
            let size = try FileManager.default.attributesOfItem(atPath: TestFootage.twentySeconds)[.size] as? Int ?? 0
            let reserve = try curl([
                "-X", "POST", "-H", "Content-Type: application/json",
                "-d", #"{"filename": "big.mov", "target_duration": 6, "quality": "low", "codec": "h264", "size_bytes": \#(size)}"#,
                "\(base)/api/v1/uploads",
            ])
            #expect(reserve.status == 200, "\(reserve.body)")
            let reserved = try CurlAPI.json(reserve.body)
            let id = try #require(reserved["job_id"] as? String)
            let url = try #require(reserved["upload_url"] as? String)
            let early = try CurlAPI.error(try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"]))
            #expect(early.status == 409 && early.code == "upload_missing")
            // The length is signed into the URL: SeaweedFS refuses any other.
            #expect(try curl(["-X", "PUT", "--upload-file", "/etc/hostname", url]).status == 403)
            #expect(try curl(["-X", "PUT", "--upload-file", TestFootage.twentySeconds, url]).status == 200)
            let started = try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"])
            let startedID = try CurlAPI.json(started.body)["job_id"] as? String
            #expect(started.status == 200 && startedID == id, "\(started.body)")
            #expect(try curl(["-X", "POST", "\(base)/api/v1/jobs/\(id)/start"]).status == 200, "starting twice is harmless")
            // The URL is still valid, but a PUT after the start lands where the job never reads.
            let garbage = FileManager.default.temporaryDirectory.appendingPathComponent("moments-garbage-\(id).bin")
            try Data(repeating: 0x5A, count: size).write(to: garbage)
            defer { try? FileManager.default.removeItem(at: garbage) }
            #expect(try curl(["-X", "PUT", "--upload-file", garbage.path, url]).status == 200)
            let done = try await TestServices.eventually(timeout: .seconds(90)) {
                (try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)/status"]).body))["status"] as? String == "completed"
            }
            #expect(done)
            let details = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)"]).body)
            #expect(details["original_filename"] as? String == "big.mov" && details["target_duration"] as? Double == 6)
            #expect(details["codec"] as? String == "h264", "the codec asked for is kept with the job")

            // Cancel through the API mid-run: a second upload, cancelled while a worker works on it, ends
            // cancelled and never gets a result (WorkerTests checks the engine stops and leaves no files).
            let upload = try curl([
                "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=15",
                "-F", "codec=h264", "\(base)/api/v1/upload",
            ])
            let second = try #require((try CurlAPI.json(upload.body))["job_id"] as? String)
            // Two minutes: on a loaded machine (a build beside the suite) the worker was seen to take
            // over a minute to reach 5 %; the job is still well short of done then.
            var seen: [String: Any] = [:]
            let running = try await TestServices.eventually(timeout: .seconds(120)) {
                seen = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(second)/status"]).body)
                return seen["status"] as? String == "processing" && (seen["progress"] as? Int ?? 0) >= 5
            }
            try #require(running, "the second job is mid-run; last seen \(seen)")
            let cancel = try curl(["-X", "DELETE", "\(base)/api/v1/jobs/\(second)"])
            let cancelledStatus = try CurlAPI.json(cancel.body)["status"] as? String
            #expect(cancel.status == 200 && cancelledStatus == "cancelled", "\(cancel.body)")
            try await Task.sleep(for: .seconds(3))
            let after = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(second)"]).body)
            #expect(after["status"] as? String == "cancelled" && after["result_size"] is NSNull, "\(after)")
            let notReady = try CurlAPI.error(try curl(["\(base)/api/v1/jobs/\(second)/download"]))
            #expect(notReady.status == 409 && notReady.code == "not_ready")
        }
    }

    @Test(
        "Retention: the source goes once the highlight is stored; past RESULT_RETENTION_DAYS a worker's sweep deletes the highlight and the download answers 410 result_expired"
    )
    func retention() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            try await System.withSystem(workers: 1, settings: ["RETENTION_SWEEP_SECONDS": "10"], databaseURL: databaseURL) { base in
                let upload = try curl([
                    "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=8",
                    "-F", "quality=low", "\(base)/api/v1/upload",
                ])
                let jobID = try CurlAPI.json(upload.body)["job_id"] as? String
                let id = try #require(jobID.flatMap(UUID.init(uuidString:)), "\(upload.body)")
                #expect(try await TestServices.eventually(timeout: .seconds(90)) { try await store.job(id)?.sourceDeletedAt != nil })
                let job = try #require(try await store.job(id))
                #expect(job.status == .completed && job.resultExpiredAt == nil)
                #expect(try curl(["-o", "/dev/null", "\(base)/api/v1/jobs/\(id)/download"]).status == 302)

                try await store.client.query("UPDATE jobs SET completed_at = now() - interval '31 days' WHERE id = \(id)")
                #expect(
                    try await TestServices.eventually(timeout: .seconds(30)) { try await store.job(id)?.resultExpiredAt != nil },
                    "the worker's next sweep (every 10 s here) expired it")
                let expired = try CurlAPI.error(try curl(["\(base)/api/v1/jobs/\(id)/download"]))
                #expect(expired.status == 410 && expired.code == "result_expired" && !expired.message.isEmpty)
                let status = try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)/status"]).body)
                #expect(status["status"] as? String == "completed", "the job's record stays until JOB_RETENTION_DAYS")
            }
        }
    }

    @Test("Progress push: Server-Sent Events carry the status as it changes and close when the job ends")
    func serverSentEvents() async throws {
        try await System.withSystem { base in
            let upload = try curl([
                "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=8",
                "-F", "quality=low", "\(base)/api/v1/upload",
            ])
            let id = try #require(try CurlAPI.json(upload.body)["job_id"] as? String)
            // curl returns when the server closes the stream: at the terminal state.
            let stream = try curl(["-N", "--max-time", "90", "\(base)/api/v1/jobs/\(id)/events"])
            #expect(stream.status == 200)
            let events = try stream.body.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: status") }.map { block in
                try CurlAPI.json(String(block.split(separator: "\n").first { $0.hasPrefix("data: ") }?.dropFirst(6) ?? ""))
            }
            let progress = events.compactMap { $0["progress"] as? Int }
            #expect(!events.isEmpty && events.last?["status"] as? String == "completed", "\(stream.body)")
            #expect(progress == progress.sorted() && progress.last == 100, "\(progress)")
            #expect(events.last?["result_url"] as? String == "\(base)/api/v1/jobs/\(id)/download")
        }
    }

    @Test("With local storage the download is served by the API, with byte ranges for AVPlayer; start-up removes crashed processes' leftovers")
    func localStorageDownloadWithRanges() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moments-objects-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // What a killed API and a killed worker left two hours ago, beside someone else's file.
        let scratch = folder.appendingPathComponent("scratch")
        try FileManager.default.createDirectory(at: scratch.appendingPathComponent("moments-job-dead-1"), withIntermediateDirectories: true)
        for name in ["moments-upload-dead", "moments-job-dead-1/source.mov", "notes.txt"] {
            try Data([1]).write(to: scratch.appendingPathComponent(name))
        }
        for name in ["moments-upload-dead", "moments-job-dead-1/source.mov", "moments-job-dead-1", "notes.txt"] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-7200)],
                ofItemAtPath: scratch.appendingPathComponent(name).path)
        }
        try await System.withSystem(storageURL: "file://\(folder.path)", settings: ["UPLOAD_DIR": scratch.path, "WORK_DIR": scratch.path]) { base in
            #expect(
                try await TestServices.eventually(timeout: .seconds(10)) {
                    try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["notes.txt"]
                }, "the API removed the spooled upload and a worker the work folder; other files stay")
            let upload = try curl([
                "-F", "file=@\(TestFootage.twentySeconds);type=video/mp4", "-F", "target_duration=6",
                "-F", "quality=low", "\(base)/api/v1/upload",
            ])
            let id = try #require(try CurlAPI.json(upload.body)["job_id"] as? String, "\(upload.body)")
            let done = try await TestServices.eventually(timeout: .seconds(90)) {
                (try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)/status"]).body))["status"] as? String == "completed"
            }
            #expect(done)
            let url = "\(base)/api/v1/jobs/\(id)/download"
            let whole = folder.appendingPathComponent("whole.mp4")
            #expect(try curl(["-o", whole.path, url]).status == 200)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: whole.path)[.size] as? Int)
            #expect(size == (try CurlAPI.json(try curl(["\(base)/api/v1/jobs/\(id)"]).body))["result_size"] as? Int)
            #expect(abs(try TestFootage.duration(whole.path) - 6) <= 0.5)
            let part = folder.appendingPathComponent("part.bin")
            let ranged = try curl(["-D", "-", "-o", part.path, "-H", "Range: bytes=100-1099", url])
            #expect(ranged.status == 206)
            #expect(ranged.body.lowercased().contains("content-range: bytes 100-1099/\(size)"), "\(ranged.body)")
            let bytes = try Data(contentsOf: part)
            #expect(bytes == (try Data(contentsOf: whole)).subdata(in: 100..<1100))
            let tail = try curl(["-o", "/dev/null", "-H", "Range: bytes=-10", url])
            #expect(tail.status == 206)
            let impossible = try curl(["-o", "/dev/null", "-H", "Range: bytes=\(size + 10)-", url])
            #expect(impossible.status == 416)
        }
    }

    @Test("SIGTERM: a worker gives its running job back at once and another worker finishes it")
    func sigtermGivesTheJobBack() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let environment = try System.environment(databaseURL: databaseURL, ["WORKER_SHUTDOWN_GRACE_SECONDS": "0"])
            let (api, base) = try await System.startAPI(environment)
            defer { api.stop() }
            let leaving = try MomentsProcess(["worker"], environment: environment)
            defer { leaving.stop() }
            let id = try await System.uploadAndWaitUntilMidJob(base, store: store)
            leaving.terminate()
            let exited = try await TestServices.eventually(timeout: .seconds(10)) { !leaving.isRunning }
            #expect(exited, "the worker exits promptly after SIGTERM")
            #expect(try await store.job(id)?.status == .pending, "given back, not left to lapse")
            let staying = try MomentsProcess(["worker"], environment: environment)
            defer { staying.stop() }
            let done = try await TestServices.eventually(timeout: .seconds(60)) { try await store.job(id)?.status == .completed }
            #expect(done)
            let events = try await store.events(id)
            try #require(events.map(\.to) == [.pending, .processing, .pending, .processing, .completed], "\(events)")
            #expect(events[2].detail?.contains("given back") == true && events[3].attempt == 2)
        }
    }

    @Test("SIGKILL: a worker killed mid-job; the other takes the job over when the lease lapses and completes it once")
    func sigkillMidJob() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { store, databaseURL in
            let metricsPort = Int.random(in: 30_000..<32_000)
            var environment = try System.environment(databaseURL: databaseURL, ["WORKER_LEASE_SECONDS": "5", "WORKER_HEARTBEAT_SECONDS": "1"])
            let (api, base) = try await System.startAPI(environment)
            defer { api.stop() }
            let doomed = try MomentsProcess(["worker"], environment: environment)
            defer { doomed.stop() }
            let id = try await System.uploadAndWaitUntilMidJob(base, store: store)
            doomed.stop()  // SIGKILL: no goodbye, the lease just stops being renewed
            environment["METRICS_PORT"] = "\(metricsPort)"
            let survivor = try MomentsProcess(["worker"], environment: environment)
            defer { survivor.stop() }
            let done = try await TestServices.eventually(timeout: .seconds(120)) { try await store.job(id)?.status == .completed }
            #expect(done)
            let events = try await store.events(id)
            try #require(events.map(\.to) == [.pending, .processing, .processing, .completed], "\(events)")
            #expect(events[2].detail?.contains("lapsed") == true && events[2].attempt == 2)
            let kill = events[1].at, takeover = events[2].at
            #expect(takeover.timeIntervalSince(kill) >= 5, "not before the lease lapsed")
            let highlight = try System.downloadedDuration(base, id: id)
            #expect(highlight.status == 200)
            #expect(abs(highlight.duration - 15) <= 0.5)
            // The survivor measured the attempt it finished.
            let metrics = try curl(["http://127.0.0.1:\(metricsPort)/metrics"])
            #expect(metrics.body.contains(#"moments_job_attempts_total{outcome="completed"} 1"#), "\(metrics.body)")
            #expect(metrics.body.contains(#"moments_job_processing_seconds_count{outcome="completed"} 1"#))
            #expect(metrics.body.contains("moments_job_real_time_factor_count 1"))
        }
    }

    @Test(
        "/ready?deep=1 answers 503 while PostgreSQL is down and /ready stays 200 (the node still serves: its JSON 503s), requests and polls get service_unavailable, and both recover when it returns"
    )
    func readinessFollowsPostgreSQL() async throws {
        let postgres = try PrivatePostgres()
        defer { postgres.destroy() }
        try await System.withSystem(workers: 0, databaseURL: postgres.url) { base in
            let formats = try curl(["\(base)/api/v1/upload/formats"])
            #expect(formats.status == 200)
            let registration = try curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", "{}", "\(base)/api/v1/devices"])
            let token = try #require(try CurlAPI.json(registration.body)["token"] as? String, "\(registration)")
            try postgres.stop()
            var readiness: (status: Int, body: String) = (0, "")
            let down = try await TestServices.eventually(timeout: .seconds(20)) {
                readiness = try curl(["--max-time", "10", "\(base)/ready?deep=1"])
                return readiness.status == 503
            }
            #expect(down, "\(readiness)")
            let shallow = try curl(["--max-time", "10", "\(base)/ready"])
            #expect(
                shallow.status == 200 && (try? CurlAPI.json(shallow.body)["status"] as? String) == "ready",
                "the readiness probe keeps a node that can answer in the service: \(shallow)")
            let checks = try CurlAPI.json(readiness.body)["checks"] as? [String: String]
            #expect(checks?["postgresql"] == "unreachable" && checks?["redis"] == "ok", "\(readiness.body)")
            let status = try CurlAPI.error(try curl(["--max-time", "30", "\(base)/api/v1/jobs/\(UUID().uuidString)/status"]))
            #expect(status.status == 503 && status.code == "service_unavailable", "\(status)")
            #expect(!status.message.lowercased().contains("postgres") && !status.message.contains("SELECT"), "no internals: \(status)")
            // Polls with a token, several at once (they share statements): each is answered 503 within the database timeout.
            let started = ContinuousClock.now
            let polls = try await withThrowingTaskGroup(of: (status: Int, code: String, message: String).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try CurlAPI.error(
                            try curl(["--max-time", "30", "-H", "Authorization: Bearer \(token)", "\(base)/api/v1/jobs/\(UUID().uuidString)/status"]))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(polls.allSatisfy { $0.status == 503 && $0.code == "service_unavailable" }, "\(polls)")
            #expect(ContinuousClock.now - started < .seconds(25), "answered within the database timeout, not one timeout after another")
            try postgres.start()
            let back = try await TestServices.eventually(timeout: .seconds(30)) { (try? curl(["\(base)/ready?deep=1"]).status) == 200 }
            #expect(back, "ready again once PostgreSQL is back")
            #expect(try CurlAPI.error(try curl(["\(base)/api/v1/jobs/\(UUID().uuidString)/status"])).code == "job_not_found")
            let polled = try CurlAPI.error(try curl(["-H", "Authorization: Bearer \(token)", "\(base)/api/v1/jobs/\(UUID().uuidString)/status"]))
            #expect(polled.code == "job_not_found", "polls with a token work again: \(polled)")
        }
    }
}
