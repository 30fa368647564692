import Foundation
import MomentsContract
import Testing

@testable import MomentsKit

/// The contract's JSON, as docs/client-contract.md writes it and as the iOS app's decoder reads it.
@Suite("Contract JSON and the event-stream parser")
struct ContractTests {
    @Test("docs/client-contract.md is the app team's contract word for word (../shared/CLIENT-CONTRACT.md, where it is beside the repository)")
    func contractDocument() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let ours = try String(contentsOf: root.appendingPathComponent("docs/client-contract.md"), encoding: .utf8)
        #expect(ours.hasPrefix("# What the iOS app expects from the API") && ours.contains("POST /api/v1/upload"))
        let theirs = root.deletingLastPathComponent().appendingPathComponent("shared/CLIENT-CONTRACT.md")
        if FileManager.default.fileExists(atPath: theirs.path) {
            #expect(ours == (try String(contentsOf: theirs, encoding: .utf8)), "docs/client-contract.md differs from \(theirs.path): copy it again")
        }
    }

    @Test("The contract's example status decodes; unknown keys are ignored; nulls are nil")
    func decodesTheContractExample() throws {
        let json = #"""
            {"job_id": "8c1d2f3e-0000-4000-8000-00000000abcd", "status": "processing", "progress": 45,
             "message": "Analyzing motion", "result_url": null, "created_at": "2026-11-21T10:15:03Z",
             "completed_at": null, "original_filename": "IMG_0042.MOV", "duration": 187.4, "segments_selected": null,
             "some_future_field": [1, 2]}
            """#
        let report = try MomentsJSON.decoder.decode(JobStatusReport.self, from: Data(json.utf8))
        #expect(report.status == .processing && report.progress == 45 && report.message == "Analyzing motion")
        #expect(report.resultURL == nil && report.completedAt == nil && report.segmentsSelected == nil)
        #expect(report.createdAt == Date(timeIntervalSince1970: 1_795_256_103))
        #expect(report.jobID == UUID(uuidString: "8c1d2f3e-0000-4000-8000-00000000abcd"))
    }

    @Test("Encoding keeps every key (null when empty), lowercase ids and dates without fractions")
    func encodesLikeTheServer() throws {
        let report = JobStatusReport(
            jobID: UUID(uuidString: "8C1D2F3E-0000-4000-8000-00000000ABCD")!, status: .pending, progress: 0,
            message: nil, resultURL: nil, createdAt: Date(timeIntervalSince1970: 1_795_256_103.789),
            completedAt: nil, originalFilename: nil, duration: nil, segmentsSelected: nil)
        let text = String(decoding: try MomentsJSON.encoder.encode(report), as: UTF8.self)
        #expect(
            text
                == #"{"completed_at":null,"created_at":"2026-11-21T10:15:03Z","duration":null,"job_id":"8c1d2f3e-0000-4000-8000-00000000abcd","message":null,"original_filename":null,"progress":0,"result_url":null,"segments_selected":null,"status":"pending"}"#
        )
        #expect(try MomentsJSON.decoder.decode(JobStatusReport.self, from: Data(text.utf8)).createdAt == Date(timeIntervalSince1970: 1_795_256_103))
    }

    @Test("Details carry the status fields and the rest; the error shape decodes")
    func detailsAndErrors() throws {
        let report = JobStatusReport(
            jobID: UUID(), status: .completed, progress: 100, message: "Done", resultURL: "https://x/y",
            createdAt: Date(timeIntervalSince1970: 1_795_256_103), completedAt: Date(timeIntervalSince1970: 1_795_256_140),
            originalFilename: "a.mov", duration: 20, segmentsSelected: 2)
        let details = JobDetails(
            report: report, stage: "done", quality: .low, targetDuration: 8, errorCode: nil, errorMessage: nil,
            attempt: 1, maxAttempts: 3, startedAt: report.createdAt, updatedAt: report.createdAt, sourceSize: 10,
            resultSize: 5, segments: [SelectedSegment(start: 1, end: 5, score: 0.7), SelectedSegment(start: 9, end: 13, score: 0.5)])
        let decoded = try MomentsJSON.decoder.decode(JobDetails.self, from: try MomentsJSON.encoder.encode(details))
        #expect(decoded == details)
        let error = try MomentsJSON.decoder.decode(
            ErrorReply.self, from: Data(#"{"error": {"code": "quota_exceeded", "message": "No highlights left."}}"#.utf8))
        #expect(error.error.code == "quota_exceeded")
        let fromServer = MomentsClientError.server(
            status: 402, body: Data(#"{"error": {"code": "quota_exceeded", "message": "No highlights left."}}"#.utf8))
        #expect(fromServer.code == "quota_exceeded" && fromServer.status == 402 && !fromServer.isTransient)
        #expect(fromServer.requestID == nil, "a 1.1 server names no request")
        let named = MomentsClientError.server(
            status: 429, body: Data(#"{"error": {"code": "rate_limited", "message": "Wait.", "request_id": "ios-42"}}"#.utf8))
        #expect(named.requestID == "ios-42" && named.code == "rate_limited")
        let proxy = MomentsClientError.server(status: 502, body: Data("<html>Bad Gateway</html>".utf8))
        #expect(proxy.code == "http_502" && proxy.isTransient)
    }

    @Test("Server-Sent Events split across arbitrary chunk boundaries, with comments and CRLF")
    func eventStream() {
        let stream = ": keep-alive\n\nevent: status\ndata: {\"a\":1}\n\nevent: status\r\ndata: {\"a\":2}\r\n\r\ndata: plain\n\n"
        let bytes = Array(stream.utf8)
        for size in [1, 3, 7, bytes.count] {
            let parser = EventStreamParser()
            var events: [EventStreamParser.Event] = []
            for start in stride(from: 0, to: bytes.count, by: size) {
                events += parser.feed(Data(bytes[start..<min(start + size, bytes.count)]))
            }
            #expect(
                events == [
                    .init(name: "status", data: #"{"a":1}"#), .init(name: "status", data: #"{"a":2}"#),
                    .init(name: "message", data: "plain"),
                ], "chunks of \(size)")
        }
    }

    @Test("Transfer progress fractions")
    func progress() {
        #expect(TransferProgress(bytes: 50, total: 200).fraction == 0.25)
        #expect(TransferProgress(bytes: 50, total: nil).fraction == nil)
        #expect(TransferProgress(bytes: 300, total: 200).fraction == 1)
    }
}
