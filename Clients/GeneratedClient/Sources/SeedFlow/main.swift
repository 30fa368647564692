import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The seed app's flow through the generated client only: register a device, upload a video,
// poll its status to the end, download the highlight.
//
//     SeedFlow <server URL> <video> <output.mp4>

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Sends the device's token on every request, as the document's `device` security scheme says.
struct Bearer: ClientMiddleware {
    let token: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let server = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: SeedFlow <server URL> <video> <output.mp4>\n".utf8))
    exit(64)
}
let (video, output) = (URL(fileURLWithPath: arguments[2]), URL(fileURLWithPath: arguments[3]))

do {
    let open = Client(serverURL: server, transport: URLSessionTransport())
    let registered = try await open.registerDevice(body: .json(.init(name: "Generated client")))
    guard case .created(let created) = registered else { throw Failure("registerDevice answered \(registered)") }
    let token = try created.body.json.token
    print("registered: a device token of \(token.count) characters")

    let client = Client(serverURL: server, transport: URLSessionTransport(), middlewares: [Bearer(token: token)])
    let parts: MultipartBody<Operations.UploadVideo.Input.Body.MultipartFormPayload> = [
        .targetDuration(.init(payload: .init(body: HTTPBody("5")))),
        .quality(.init(payload: .init(body: HTTPBody("low")))),
        .metadata(.init(payload: .init(body: .init(additionalProperties: ["client": "swift-openapi-generator"])))),
        .file(.init(payload: .init(body: HTTPBody(try Data(contentsOf: video))), filename: video.lastPathComponent)),
    ]
    let uploaded = try await client.uploadVideo(body: .multipartForm(parts))
    guard case .ok(let accepted) = uploaded else { throw Failure("uploadVideo answered \(uploaded)") }
    let job = try accepted.body.json.jobId
    print("uploaded: job \(job)")

    var last = ""
    let deadline = Date().addingTimeInterval(600)
    while true {
        let polled = try await client.getJobStatus(path: .init(id: job))
        guard case .ok(let ok) = polled else { throw Failure("getJobStatus answered \(polled)") }
        let status = try ok.body.json
        if "\(status.status) \(status.progress)" != last {
            last = "\(status.status) \(status.progress)"
            print("status: \(status.status.rawValue) \(status.progress) %")
        }
        switch status.status {
        case .completed:
            guard status.metadata?.additionalProperties["client"] == "swift-openapi-generator" else {
                throw Failure("the metadata did not come back: \(String(describing: status.metadata))")
            }
        case .failed, .cancelled: throw Failure("the job ended \(status.status.rawValue): \(status.message ?? "")")
        case .pending, .processing:
            guard Date() < deadline else { throw Failure("the job did not end within 10 minutes") }
            try await Task.sleep(for: .milliseconds(500))
            continue
        }
        break
    }

    // S3 storage answers with a redirect, which URLSession follows; local storage with the file.
    let downloaded = try await client.downloadHighlight(path: .init(id: job))
    guard case .ok(let file) = downloaded else { throw Failure("downloadHighlight answered \(downloaded)") }
    let bytes = try await Data(collecting: try file.body.videoMp4, upTo: 1 << 30)
    try bytes.write(to: output)
    print("downloaded: \(bytes.count) bytes to \(output.path)")
} catch {
    FileHandle.standardError.write(Data("SeedFlow: \(error)\n".utf8))
    exit(1)
}
