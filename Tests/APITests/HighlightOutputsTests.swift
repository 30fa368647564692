import Foundation
import JobStore
import ServiceTestSupport
import Testing

/// API 1.1's highlight choices and outputs through real `moments api` and `moments worker`
/// processes against PostgreSQL, Redis and SeaweedFS.
@Suite("Highlight choices and outputs (real processes and servers)", .serialized, .heavy)
struct HighlightOutputsTests {
    typealias System = LiveSystem

    /// Uploads `file` with `fields` and waits for the job to end; answers its id and details.
    static func highlight(_ base: String, _ auth: [String], file: String = TestFootage.twentySeconds,
                          fields: [String: String]) async throws -> (id: String, details: [String: Any]) {
        let form = fields.sorted { $0.key < $1.key }.flatMap { ["-F", "\($0.key)=\($0.value)"] }
        let upload = try curl(auth + ["-F", "file=@\(file);filename=IMG_0007.MOV;type=video/mp4"] + form + ["\(base)/api/v1/upload"])
        try #require(upload.status == 200, "\(upload.body)")
        let id = try #require(try System.json(upload.body)["job_id"] as? String)
        var details: [String: Any] = [:]
        let ended = try await TestServices.eventually(timeout: .seconds(120)) {
            details = try System.json(try curl(auth + ["\(base)/api/v1/jobs/\(id)"]).body)
            return ["completed", "failed", "cancelled"].contains(details["status"] as? String ?? "")
        }
        try #require(ended && details["status"] as? String == "completed", "\(details)")
        return (id, details)
    }

    @Test("min_segment, max_segment and max_segments: kept by the highlight, shown in the details, refused when impossible")
    func segmentChoices() async throws {
        try await System.withSystem(workers: 1, settings: ["AUTH_REQUIRED": "true"]) { base in
            let auth = try System.device(base)
            let (_, details) = try await Self.highlight(base, auth, fields: ["target_duration": "10", "min_segment": "3",
                                                                             "max_segment": "4", "quality": "low"])
            #expect(details["min_segment"] as? Double == 3 && details["max_segment"] as? Double == 4, "\(details)")
            #expect(details["max_segments"] == nil && details["aspect"] == nil, "choices not made are left out")
            let segments = try #require(details["segments"] as? [[String: Double]])
            let lengths = segments.map { ($0["end"] ?? 0) - ($0["start"] ?? 0) }
            #expect(lengths.allSatisfy { $0 >= 3 - 1.0 / 30 && $0 <= 4 + 1.0 / 30 }, "\(lengths)")
            #expect(abs(lengths.reduce(0, +) - 10) <= 0.6, "\(lengths)")

            let (_, few) = try await Self.highlight(base, auth, fields: ["target_duration": "10", "max_segments": "2", "quality": "low"])
            #expect(few["max_segments"] as? Int == 2)
            #expect((few["segments"] as? [Any])?.count ?? 0 <= 2, "\(few)")

            for (fields, code) in [(["min_segment": "0.2"], "invalid_min_segment"), (["max_segment": "abc"], "invalid_max_segment"),
                                   (["max_segments": "100"], "invalid_max_segments"), (["aspect": "3:4"], "invalid_aspect"),
                                   (["min_segment": "5", "max_segment": "4"], "invalid_segments"),
                                   (["max_segment": "2", "max_segments": "3", "target_duration": "30"], "invalid_segments")] {
                let form = fields.flatMap { ["-F", "\($0.key)=\($0.value)"] }
                let refused = try System.error(try curl(auth + ["-F", "file=@\(TestFootage.sixSeconds);type=video/mp4"] + form
                    + ["\(base)/api/v1/upload"]))
                #expect(refused.status == 422 && refused.code == code && !refused.message.isEmpty, "\(fields): \(refused)")
            }
            let direct = try System.error(try curl(auth + ["-X", "POST", "-H", "Content-Type: application/json", "-d",
                                                           #"{"target_duration": 10, "max_segment": 2, "max_segments": 2}"#,
                                                           "\(base)/api/v1/uploads"]))
            #expect(direct.status == 422 && direct.code == "invalid_segments", "\(direct)")
        }
    }
}
