import Foundation
import PostgresNIO

/// Where the job database is, read from a `DATABASE_URL` such as
/// `postgres://user:password@host:5432/moments?sslmode=require` (the form Railway, Render and
/// Kubernetes secrets provide). `description` never shows the password.
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        /// Plain TCP (private networks, local development).
        case disable
        /// TLS when the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS always, without checking the certificate (what managed databases with private CAs need).
        case require
        /// TLS with the certificate checked against the system's CAs and the host name.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// The most connections the process keeps (`DATABASE_POOL_SIZE`; `defaultPoolSize`).
    public var maximumConnections: Int
    /// How many status-poll statements may run at once in a lane (`JobStore.pollStatus`; a lane's
    /// statements share its one connection); polls beyond wait and go together in the next. One is
    /// best: each statement then answers more polls (docs/benchmarks.md, status poll).
    public var pollConcurrency = 1
    /// How long a job-store call may take before its caller hears `unavailable` (10 s; a few
    /// calls that scan or migrate take longer and say so). See `JobStore.database`.
    public var callTimeout: Duration = .seconds(10)

    public init(
        host: String, port: Int = 5432, username: String, password: String?, database: String,
        tls: TLSMode = .prefer, maximumConnections: Int = DatabaseConfiguration.defaultPoolSize
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.maximumConnections = maximumConnections
    }

    /// Two connections per core, 4 to 10: a node's requests wait on the database, not on the pool
    /// (status polls share statements and need one), and ten API nodes or workers stay within a
    /// small managed database's 100 connections.
    public static var defaultPoolSize: Int { min(10, max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)) }

    /// Parses a `postgres://` or `postgresql://` URL. `sslmode` may be disable, prefer, require,
    /// verify-ca or verify-full (verify-ca is treated as verify-full).
    public init(url string: String) throws(JobStoreError) {
        guard let url = URLComponents(string: string), let scheme = url.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw JobStoreError(.invalidConfiguration, "DATABASE_URL must look like postgres://user:password@host:5432/database.")
        }
        guard let host = url.host, !host.isEmpty else {
            throw JobStoreError(.invalidConfiguration, "DATABASE_URL has no host.")
        }
        guard let user = url.user, !user.isEmpty else {
            throw JobStoreError(.invalidConfiguration, "DATABASE_URL has no user name.")
        }
        let database = String(url.path.drop(while: { $0 == "/" }))
        var tls = TLSMode.prefer
        for item in url.queryItems ?? [] where item.name == "sslmode" {
            switch item.value ?? "" {
            case "disable", "allow": tls = .disable
            case "prefer": tls = .prefer
            case "require": tls = .require
            case "verify-ca", "verify-full": tls = .verifyFull
            default:
                throw JobStoreError(.invalidConfiguration, "DATABASE_URL's sslmode must be disable, prefer, require, verify-ca or verify-full.")
            }
        }
        self.init(
            host: host, port: url.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.isEmpty ? user : (database.removingPercentEncoding ?? database), tls: tls)
    }

    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database) (tls: \(tls.rawValue))"
    }

    /// TLS as `sslmode` asks (nil: none), and whether the server must offer it.
    private var tlsSettings: (configuration: TLSConfiguration, required: Bool)? {
        switch tls {
        case .disable:
            return nil
        case .prefer, .require:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return (configuration, tls == .require)
        case .verifyFull:
            return (.makeClientConfiguration(), true)
        }
    }

    var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            tlsSettings.map { $0.required ? .require($0.configuration) : .prefer($0.configuration) } ?? .disable
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username,
            password: password, database: database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// The same settings for one connection (the status polls' lanes).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var tls = PostgresConnection.Configuration.TLS.disable
        if let settings = tlsSettings {
            let context = try NIOSSLContext(configuration: settings.configuration)
            tls = settings.required ? .require(context) : .prefer(context)
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username,
            password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
