import Configuration
import Foundation
import MomentsModel
import MomentsSupport
import SystemPackage

/// Where `moments` reads its settings, through swift-configuration, first match wins:
///
/// 1. the process environment (what Railway, Render and Kubernetes inject);
/// 2. a `.env` file: `MOMENTS_ENV_FILE`, or `.env` in the current folder when there is one
///    (`NAME=value` lines, `#` comments; values are taken as written, without quotes);
/// 3. a secrets directory, one file per setting named as the variable (`DATABASE_URL`,
///    `S3_SECRET_ACCESS_KEY`, …; a trailing newline is ignored): `MOMENTS_SECRETS_DIR`, or
///    `/run/secrets` (Docker and Compose secrets; mount a Kubernetes Secret there) when it exists.
///
/// A variable set but empty counts as unset, there as in every source. A `MOMENTS_ENV_FILE` or
/// `MOMENTS_SECRETS_DIR` that names nothing stops the process with a
/// message naming the variable; the defaults may be absent.
enum SettingsSources {
    /// Settings whose values are credentials: kept out of swift-configuration's access log.
    static let secrets: Set<String> = [
        "DATABASE_URL", "REDIS_URL", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_SESSION_TOKEN", "WEBHOOK_SECRET",
    ]

    static func load(environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> Settings {
        var providers: [any ConfigProvider] = [EnvironmentVariablesProvider(environmentVariables: environment)]
        if let file = environment["MOMENTS_ENV_FILE"], !file.isEmpty {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw SettingError("MOMENTS_ENV_FILE names \(file), which is not a readable file.")
            }
            providers.append(try await EnvironmentVariablesProvider(environmentFilePath: FilePath(file)))
        } else if FileManager.default.isReadableFile(atPath: ".env") {
            providers.append(try await EnvironmentVariablesProvider(environmentFilePath: ".env"))
        }
        if let folder = environment["MOMENTS_SECRETS_DIR"], !folder.isEmpty {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw SettingError("MOMENTS_SECRETS_DIR names \(folder), which is not a folder.")
            }
            providers.append(try await DirectoryFilesProvider(directoryPath: FilePath(folder)))
        } else {
            providers.append(try await DirectoryFilesProvider(directoryPath: "/run/secrets", allowMissing: true))
        }
        // One reader per source, so that a variable set but empty (as platforms leave optional ones)
        // counts as unset and the next source is asked, as everywhere else in Moments.
        let readers = providers.map { ConfigReader(provider: $0) }
        return Settings { name in
            for reader in readers {
                if let value = reader.string(forKey: ConfigKey([name]), isSecret: secrets.contains(name)), !value.isEmpty { return value }
            }
            return nil
        }
    }
}
