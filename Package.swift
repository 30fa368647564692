// swift-tools-version: 6.1
import PackageDescription

/// The server's own dependencies (HTTP, PostgreSQL, Redis, storage, telemetry, the command line)
/// belong to the default trait `Server`. An app that depends on this package for MomentsKit with
/// `traits: []` resolves and builds none of them (docs/sdk.md).
let server: TargetDependencyCondition? = .when(traits: ["Server"])

let package = Package(
    name: "Moments",
    // macOS 15 for the server's targets (Synchronization's Mutex); the SDK (MomentsKit and what it
    // depends on: MomentsContract, MomentsModel) needs only iOS 17 (Observation), and nothing of the
    // server is built for iOS.
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "moments", targets: ["moments"]),
        // The Swift SDK for the iOS app (and any Swift client): models, client, view models.
        .library(name: "MomentsKit", targets: ["MomentsKit"]),
    ],
    traits: [
        .trait(name: "Server", description: "The service itself (the moments command): everything but MomentsKit needs it."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // OTLP over HTTP only: the gRPC exporter (and grpc-swift) stays out of the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // C only: FFmpeg's headers and a shim for its macros.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev", "libavfilter-dev"])]
        ),
        // C only: hiredis (Redis) and libcurl (S3 transport), with shims for variadic calls.
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Shared vocabulary only: qualities, choices, job states, error codes. Depends on nothing of ours.
        .target(name: "MomentsModel"),
        // Small utilities the server's targets share: settings, backoff, blocking work, threads of
        // their own, saturating conversions, leftover scratch files, what Linux's /proc says.
        .target(name: "MomentsSupport", dependencies: ["MomentsModel"]),
        // Owners of FFmpeg handles: demux, decode, scale, resample, encode, mux.
        .target(name: "Media", dependencies: ["CFFmpeg", "MomentsModel", "MomentsSupport"]),
        // Synthetic footage with known ground truth (samples, fixtures, benchmarks).
        .target(name: "MediaSynth", dependencies: ["Media"]),
        // Frontal faces with OpenCV's Haar cascade. Optimised in debug builds too: its scan runs on
        // every sampled picture, in tests as well, and is twenty times slower unoptimised.
        .target(name: "FaceDetection", swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // The highlight engine: analysis, selection, render. Knows nothing of HTTP, SQL or Redis.
        .target(name: "Highlights", dependencies: ["FaceDetection", "Media", "MomentsModel", "MomentsSupport"]),
        // HTTP over libcurl: one exchange streaming from and to files, for S3, webhooks and health checks.
        .target(name: "CurlHTTP", dependencies: ["CCurl", "MomentsModel", "MomentsSupport"]),
        // Object storage: S3-compatible (our own SigV4 signer) and local files.
        .target(
            name: "Storage",
            dependencies: [
                "CurlHTTP", "MomentsModel", "MomentsSupport", .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
            ]),
        // A highlight as an editor's timeline: CMX 3600 EDL, FCPXML 1.10, OpenTimelineIO. Foundation only.
        .target(name: "Timelines"),
        // The API's JSON (docs/client-contract.md): encoded by the server, decoded by MomentsKit. Foundation only.
        .target(name: "MomentsContract", dependencies: ["MomentsModel"]),
        // The client SDK: MomentsClient (URLSession) and @Observable view models. Foundation and Observation only.
        .target(name: "MomentsKit", dependencies: ["MomentsContract", "MomentsModel"]),
        // PostgreSQL: migrations, the job repository with fenced transitions, admin views.
        .target(
            name: "JobStore",
            dependencies: [
                "MomentsModel", "MomentsSupport", .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
            ]),
        // Every job operation (submit, cancel, retry, record an outcome, reconcile, pause) over the job
        // store and a queue driver; the driver seams (queue, reservations, rate limits) and their
        // in-memory implementations for tests; a job as clients see it (the contract's JSON).
        .target(
            name: "Jobs",
            dependencies: [
                "JobStore", "MomentsContract", "MomentsModel", "MomentsSupport", "Storage",
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
            ]),
        // Redis: connection, and the drivers of `Jobs` on it (the leased job queue, reservations, rate limits).
        .target(
            name: "JobQueue",
            dependencies: ["CHiredis", "Jobs", "MomentsModel", "MomentsSupport", .product(name: "Logging", package: "swift-log", condition: server)]),
        // The worker loop: lease, heartbeat, cancel, retry, reconcile; the job's work is pluggable, and
        // the highlight engine runs in a child process per attempt.
        .target(
            name: "Worker",
            dependencies: [
                "JobStore", "Jobs", "Highlights", "Media", "Storage", "CurlHTTP", "MomentsContract", "MomentsModel", "MomentsSupport",
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "Subprocess", package: "swift-subprocess", condition: server),
                .product(name: "SystemPackage", package: "swift-system", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: server),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
            ]),
        // The HTTP API (Hummingbird 2): uploads, job status, downloads, cancel, health.
        .target(
            name: "API",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                "JobStore", "Jobs", "Storage", "Media", "MomentsContract", "MomentsModel", "MomentsSupport", "CurlHTTP", "Timelines",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: server),
                .product(name: "Mustache", package: "swift-mustache", condition: server),
                .product(name: "Metrics", package: "swift-metrics", condition: server),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
            ], resources: [.embedInCode("Resources/openapi.yaml"), .embedInCode("Resources/Console")]),
        .executableTarget(
            name: "moments",
            dependencies: [
                "Highlights", "Media", "MediaSynth", "MomentsContract", "MomentsModel", "Storage", "CurlHTTP", "JobStore", "Jobs", "JobQueue",
                "Worker", "API",
                "MomentsKit", "MomentsSupport", "Timelines",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
                .product(name: "Configuration", package: "swift-configuration", condition: server),
                .product(name: "SystemPackage", package: "swift-system", condition: server),
                .product(name: "OTel", package: "swift-otel", condition: server),
                .product(name: "Metrics", package: "swift-metrics", condition: server),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
            ]
        ),
        // The fuzzing target over probe → demux → decode → analysis on in-memory input, then the
        // whole highlight (selection, render, stills, timelines) with settings the input chooses
        // (scripts/fuzz builds it with libFuzzer and AddressSanitizer; the plain build writes seeds
        // and replays).
        .executableTarget(name: "moments-fuzz", dependencies: ["Highlights", "Media", "MediaSynth", "MomentsModel", "MomentsSupport", "Timelines"]),
        // Generated sources and settings, and what every highlight of them must keep: the suite's
        // fixed set (HighlightsTests) and the long soak (`moments-soak`, run by scripts/soak).
        .target(name: "HighlightChecks", dependencies: ["Highlights", "Media", "MediaSynth", "MomentsModel", "MomentsSupport", "Timelines"]),
        .executableTarget(name: "moments-soak", dependencies: ["HighlightChecks"]),
        .testTarget(name: "TimelinesTests", dependencies: ["Timelines"]),
        .testTarget(name: "MomentsSupportTests", dependencies: ["MomentsSupport", "MomentsModel", "TestSupport"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "MediaSynth", "ServiceTestSupport"]),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "CurlHTTP", "MomentsModel", "MomentsSupport", "ServiceTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Test support with no dependency: who may share the machine while the suite runs (MachineShare).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Test support: where the services of scripts/services are, fresh databases and key prefixes.
        .target(
            name: "ServiceTestSupport",
            dependencies: ["JobStore", "Jobs", "JobQueue", "Media", "MediaSynth", "MomentsSupport", "Storage", "TestSupport"],
            path: "Tests/ServiceTestSupport"),
        .testTarget(
            name: "APITests",
            dependencies: [
                "Jobs", "ServiceTestSupport", "JobStore", "API", "Storage", "MomentsModel", "MomentsSupport", "MomentsKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"), .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        .testTarget(
            name: "JobStoreTests",
            dependencies: [
                "JobStore", "MomentsModel", "ServiceTestSupport", .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        .testTarget(name: "JobQueueTests", dependencies: ["JobQueue", "Jobs", "JobStore", "MomentsModel", "MomentsSupport", "ServiceTestSupport"]),
        .testTarget(name: "JobsTests", dependencies: ["Jobs", "JobQueue", "JobStore", "Worker", "MomentsModel", "ServiceTestSupport"]),
        .testTarget(
            name: "WorkerTests",
            dependencies: [
                "Worker", "Jobs", "JobQueue", "JobStore", "Storage", "CurlHTTP", "MediaSynth", "Media", "MomentsModel", "MomentsSupport",
                "ServiceTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .testTarget(
            name: "MomentsKitTests",
            dependencies: [
                "MomentsKit", "MomentsContract", "ServiceTestSupport", .product(name: "Hummingbird", package: "hummingbird"),
            ]),
        // Suites that start `moments` processes (the API, workers, the command line) against the
        // real services; the other targets start none.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Highlights", "Jobs", "JobQueue", "JobStore", "Media", "MediaSynth", "MediaTestSupport", "MomentsKit", "MomentsModel",
                "MomentsSupport", "ServiceTestSupport", "Storage",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        // Test support for media: fixtures made on demand, generated sounds and faces, ffmpeg's view of an output.
        .target(
            name: "MediaTestSupport", dependencies: ["HighlightChecks", "Media", "MediaSynth", "ServiceTestSupport"],
            path: "Tests/MediaTestSupport"),
        .testTarget(
            name: "HighlightsTests",
            dependencies: [
                "FaceDetection", "Highlights", "HighlightChecks", "MediaSynth", "MediaTestSupport", "Media", "MomentsModel", "MomentsSupport",
                "ServiceTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
