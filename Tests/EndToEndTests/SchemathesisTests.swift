import Foundation
import ServiceTestSupport
import Testing

/// Schemathesis (PyPI; `scripts/test` installs it) against the served `/openapi.yaml` of a running
/// `moments api` with a device token: generated requests, valid and invalid, to every operation.
/// No answer may be a 5xx, and every answer must match its documented status, content type,
/// headers and schema; schema-violating requests must be refused and undocumented methods get 405.
/// (Schema-valid requests may still be refused: a PNG is a valid multipart file but not a video.)
/// `.alone`: a thousand requests in seconds load the shared PostgreSQL that other suites time.
@Suite("OpenAPI conformance (Schemathesis against the running API)", .alone)
struct SchemathesisTests {
    static let checks = [
        "not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance",
        "response_headers_conformance", "negative_data_rejection", "unsupported_method",
    ]

    @Test("no 5xx; statuses, content types and schemas as documented; invalid requests refused")
    func conformance() async throws {
        let tool = try TestServices.environment("MOMENTS_SCHEMATHESIS")
        // Limits high enough that generated traffic is not simply rate-limited away.
        let settings = [
            "AUTH_REQUIRED": "true", "RATE_LIMIT_UPLOADS_PER_OWNER": "100000", "RATE_LIMIT_UPLOADS_PER_IP": "100000",
            "REGISTRATIONS_PER_IP_PER_DAY": "1000000", "FREE_MONTHLY_HIGHLIGHTS": "100000",
        ]
        try await LiveSystem.withSystem(workers: 0, settings: settings) { base in
            // Erasing the device revokes the token every other operation sends: it runs last, on a device of its own.
            for (selection, auth) in [
                (["--exclude-operation-id", "eraseDevice"], try CurlAPI.device(base)),
                // (It links to nothing, so there is no stateful phase.)
                (["--include-operation-id", "eraseDevice", "--phases", "examples,coverage,fuzzing"], try CurlAPI.device(base, name: "Erased")),
            ] {
                let arguments =
                    [
                        "run", "\(base)/openapi.yaml", "--checks", Self.checks.joined(separator: ","), "--max-examples", "50",
                        "--seed", "20261123", "--no-color", "--request-timeout", "30",
                    ] + selection + auth
                let result = try captured(tool, arguments, environment: ["SCHEMATHESIS_HOOKS": ""], in: FileManager.default.temporaryDirectory)
                let text = String(decoding: result.output + result.errors, as: UTF8.self)
                #expect(result.status == 0, "\(selection): \(text.suffix(6000))")
                #expect(text.contains(" passed"), "\(selection): \(text.suffix(2000))")
            }
        }
    }
}
