import Foundation
import Hummingbird
import MomentsModel

/// The API's own settings, from the environment: `PORT` (8000, as Railway and Render set it),
/// `HOST` (0.0.0.0), `MAX_UPLOAD_BYTES` (2 GiB), `PUBLIC_URL` (the base of absolute URLs given to
/// clients; by default taken from each request's Host header), `UPLOAD_DIR` (temporary files).
public struct APIConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var maxUploadBytes: Int64
    public var publicURL: String?
    public var uploadDirectory: URL
    /// How long a presigned download URL stays valid.
    public var downloadLinkLifetime: Duration

    public init(host: String = "0.0.0.0", port: Int = 8000, maxUploadBytes: Int64 = 2 << 30, publicURL: String? = nil,
                uploadDirectory: URL = FileManager.default.temporaryDirectory, downloadLinkLifetime: Duration = .seconds(900)) {
        self.host = host
        self.port = port
        self.maxUploadBytes = maxUploadBytes
        self.publicURL = publicURL
        self.uploadDirectory = uploadDirectory
        self.downloadLinkLifetime = downloadLinkLifetime
    }

    public init(environment: [String: String]) throws(SettingError) {
        let port = try Setting.integer("PORT", in: environment, default: 8000, range: 1...65535)
        let maxUpload = try Setting.integer("MAX_UPLOAD_BYTES", in: environment, default: 2 << 30, range: 1024...(1 << 40))
        var publicURL = environment["PUBLIC_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if let url = publicURL {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw SettingError("PUBLIC_URL must be an http:// or https:// URL, not '\(url)'.")
            }
            publicURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        let uploadDirectory = URL(fileURLWithPath: environment["UPLOAD_DIR"].flatMap { $0.isEmpty ? nil : $0 }
                                  ?? FileManager.default.temporaryDirectory.path)
        guard FileManager.default.isWritableFile(atPath: uploadDirectory.path) else {
            throw SettingError("UPLOAD_DIR (\(uploadDirectory.path)) is not a folder the API can write to.")
        }
        self.init(host: environment["HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "0.0.0.0", port: port,
                  maxUploadBytes: Int64(maxUpload), publicURL: publicURL, uploadDirectory: uploadDirectory)
    }
}

/// The request context of every route: JSON dates as the app wants them.
public struct MomentsRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    public var responseEncoder: JSONEncoder { APIJSON.encoder }
}
