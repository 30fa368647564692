// swift-tools-version: 6.1
import PackageDescription

// A client generated from the API's own /openapi.yaml by swift-openapi-generator (its build
// plugin, at every build), and the seed app's flow written against it: register, upload, poll,
// download. scripts/check-generated-client builds it and runs the flow against a live server.
let package = Package(
    name: "GeneratedClient",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "SeedFlow",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")])
    ]
)
