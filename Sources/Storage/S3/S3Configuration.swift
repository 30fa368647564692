import Foundation
import MomentsModel
import MomentsSupport

/// Where an S3-compatible bucket is and how to sign for it. `description` never shows the secret.
public struct S3Configuration: Sendable, CustomStringConvertible {
    public enum Addressing: String, Sendable {
        /// `https://endpoint/bucket/key`: SeaweedFS, MinIO, R2 and most self-hosted stores.
        case path
        /// `https://bucket.endpoint/key`: AWS S3's preferred form.
        case virtualHosted = "virtual"
    }

    /// `https://s3.us-east-1.amazonaws.com`, `https://<account>.r2.cloudflarestorage.com`, `http://127.0.0.1:8333`.
    public var endpoint: URL
    /// The endpoint presigned URLs name, when clients reach storage at another address than this
    /// process does (`S3_PUBLIC_ENDPOINT`; say `http://s3:8333` inside Docker, `http://localhost:8333` outside).
    public var publicEndpoint: URL?
    public var bucket: String
    /// `auto` for Cloudflare R2.
    public var region: String
    public var credentials: SigV4Credentials
    public var addressing: Addressing
    /// Objects at least this large are uploaded in parts.
    public var multipartThreshold: Int64
    /// Size of every part but the last (R2 wants them equal); grows if an object would need more than 10,000 parts.
    public var partSize: Int64
    /// Tries per request for timeouts, dropped connections, 429 and 5xx.
    public var maxAttempts: Int
    /// Seconds a transfer may move no byte before it is abandoned and tried again (`S3_STALL_SECONDS`).
    public var stallSeconds: Int = 30

    public init(
        endpoint: URL, bucket: String, region: String = "us-east-1", credentials: SigV4Credentials,
        addressing: Addressing = .path, multipartThreshold: Int64 = 32 << 20, partSize: Int64 = 16 << 20,
        maxAttempts: Int = 5
    ) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.credentials = credentials
        self.addressing = addressing
        self.multipartThreshold = multipartThreshold
        self.partSize = partSize
        self.maxAttempts = maxAttempts
    }

    public var description: String {
        "s3://\(bucket) at \(endpoint.absoluteString) (region \(region), \(addressing.rawValue) addressing, key \(credentials.accessKeyID))"
    }
}

/// Which object store to use, from the environment:
///
/// - `STORAGE_URL=file:///var/lib/moments/objects` for a local folder, or
/// - `STORAGE_URL=s3://BUCKET` with `S3_ENDPOINT`, `S3_REGION` (default `us-east-1`; `auto` for R2),
///   `S3_ACCESS_KEY_ID`, `S3_SECRET_ACCESS_KEY`, optional `S3_SESSION_TOKEN` and `S3_ADDRESSING`
///   (`path` or `virtual`; default `virtual` for amazonaws.com endpoints, `path` otherwise), and
///   optional `S3_PUBLIC_ENDPOINT` for the address presigned URLs name, and optional
///   `S3_STALL_SECONDS` (default 30), how long a request may move no byte before it is tried again.
public enum StorageConfiguration {
    public static func store(environment: Settings) throws(StorageError) -> any ObjectStore {
        guard let raw = environment["STORAGE_URL"], !raw.isEmpty else {
            throw StorageError(.invalidConfiguration, "STORAGE_URL is not set: use file:///path/to/folder or s3://bucket.")
        }
        guard let url = URL(string: raw), let scheme = url.scheme else {
            throw StorageError(.invalidConfiguration, "STORAGE_URL must look like file:///path/to/folder or s3://bucket.")
        }
        switch scheme {
        case "file":
            return try LocalObjectStore(root: URL(fileURLWithPath: url.path))
        case "s3":
            return try S3ObjectStore(configuration: s3(bucket: url.host ?? "", environment: environment))
        default:
            throw StorageError(.invalidConfiguration, "STORAGE_URL must start with file:// or s3://, not \(scheme)://.")
        }
    }

    public static func s3(bucket: String, environment: Settings) throws(StorageError) -> S3Configuration {
        func required(_ name: String) throws(StorageError) -> String {
            guard let value = environment[name], !value.isEmpty else {
                throw StorageError(.invalidConfiguration, "\(name) is not set; S3 storage needs it.")
            }
            return value
        }
        guard !bucket.isEmpty else { throw StorageError(.invalidConfiguration, "STORAGE_URL names no bucket: use s3://bucket.") }
        let endpointText = try required("S3_ENDPOINT")
        guard let endpoint = URL(string: endpointText), ["http", "https"].contains(endpoint.scheme ?? ""), endpoint.host != nil else {
            throw StorageError(.invalidConfiguration, "S3_ENDPOINT must be an http:// or https:// URL.")
        }
        let addressing: S3Configuration.Addressing
        switch environment["S3_ADDRESSING"] ?? "" {
        case "": addressing = endpoint.host?.hasSuffix("amazonaws.com") == true ? .virtualHosted : .path
        case "path": addressing = .path
        case "virtual": addressing = .virtualHosted
        default: throw StorageError(.invalidConfiguration, "S3_ADDRESSING must be path or virtual.")
        }
        let credentials = SigV4Credentials(
            accessKeyID: try required("S3_ACCESS_KEY_ID"),
            secretAccessKey: try required("S3_SECRET_ACCESS_KEY"),
            sessionToken: environment["S3_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        var configuration = S3Configuration(
            endpoint: endpoint, bucket: bucket, region: environment["S3_REGION"] ?? "us-east-1",
            credentials: credentials, addressing: addressing)
        if let text = environment["S3_PUBLIC_ENDPOINT"], !text.isEmpty {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw StorageError(.invalidConfiguration, "S3_PUBLIC_ENDPOINT must be an http:// or https:// URL.")
            }
            configuration.publicEndpoint = url
        }
        do {
            configuration.stallSeconds = try Setting.integer("S3_STALL_SECONDS", in: environment, default: 30, range: 1...600)
        } catch {
            throw StorageError(.invalidConfiguration, error.message)
        }
        return configuration
    }
}
