// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Moments",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "moments", targets: ["moments"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // C only: FFmpeg's headers and a shim for its macros.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]
        ),
        // Shared vocabulary: qualities, error codes. Depends on nothing of ours.
        .target(name: "MomentsModel"),
        // Owners of FFmpeg handles: demux, decode, scale, resample, encode, mux.
        .target(name: "Media", dependencies: ["CFFmpeg", "MomentsModel"]),
        // Synthetic footage with known ground truth (samples, fixtures, benchmarks).
        .target(name: "MediaSynth", dependencies: ["Media"]),
        // The highlight engine: analysis, selection, render. Knows nothing of HTTP, SQL or Redis.
        .target(name: "Highlights", dependencies: ["Media", "MomentsModel"]),
        // Object storage: S3-compatible (our own SigV4 signer) and local files.
        .target(name: "Storage", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .executableTarget(
            name: "moments",
            dependencies: [
                "Highlights", "Media", "MediaSynth", "MomentsModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "MediaTests", dependencies: ["Media", "MediaSynth"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "HighlightsTests", dependencies: ["Highlights", "MediaSynth", "Media", "MomentsModel"]),
    ],
    swiftLanguageModes: [.v6]
)
