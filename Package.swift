// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Hearth", targets: ["Hearth"]),
        .executable(name: "hearth", targets: ["HearthCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Traces over OTLP/HTTP only: the gRPC exporter would build gRPC for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .target(name: "CHearthKernels"),
        // zlib, for the compression ratio that tells a repetitive transcription.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Errors, JSON, mapped files and byte readers: what every module needs and nothing else.
        .target(name: "HearthCore"),
        .target(name: "HearthFormats", dependencies: ["HearthCore"]),
        .target(name: "HearthKernels", dependencies: ["CHearthKernels", "HearthCore", "HearthFormats"]),
        .target(name: "HearthTokenizers", dependencies: ["HearthCore", "HearthFormats"]),
        .target(name: "HearthTemplates", dependencies: ["HearthCore"]),
        .target(name: "HearthConstraints", dependencies: ["HearthCore", "HearthTokenizers"]),
        .target(name: "HearthSpeech", dependencies: ["HearthCore", "HearthFormats", "HearthKernels", "CHearthKernels", "HearthTokenizers", "HearthEngine", "CZlib"]),
        .target(name: "HearthEngine", dependencies: ["HearthCore", "HearthFormats", "HearthKernels", "HearthTokenizers", "HearthTemplates", "HearthConstraints"]),
        .target(
            name: "HearthHub",
            dependencies: [
                "HearthCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(name: "HearthStore", dependencies: ["HearthCore", .product(name: "GRDB", package: "GRDB.swift")]),
        // The same store on PostgreSQL, for several servers sharing one database.
        .target(
            name: "HearthStorePostgres",
            dependencies: [
                "HearthCore", "HearthStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Its ConnectionPoolError, which the pool throws (a cancelled wait, a closed pool).
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "Hearth",
            dependencies: [
                // Every module it re-exports, so that a change in any of them rebuilds what imports Hearth.
                "HearthConstraints", "HearthCore", "HearthEngine", "HearthFormats", "HearthHub", "HearthSpeech", "HearthTokenizers",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "HearthServer",
            dependencies: [
                "Hearth",
                "HearthEngine",
                "HearthStore",
                "HearthStorePostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Web")]
        ),
        .executableTarget(
            name: "HearthCLI",
            dependencies: [
                "Hearth", "HearthServer", "HearthStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HearthTestSupport",
            dependencies: ["HearthCore", "HearthFormats", "HearthKernels", "HearthConstraints", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/HearthTestSupport"
        ),
        .target(
            name: "HubEmulator",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HubEmulator"
        ),
        .executableTarget(name: "hub-emulator", dependencies: ["HubEmulator"], path: "Tests/HubEmulatorServer"),
        // Writes the tiny models whose llama.cpp outputs are fixtures (scripts/make-tiny-model-fixtures.py).
        .executableTarget(name: "tiny-models", dependencies: ["HearthTestSupport"], path: "Tests/TinyModels"),
        // A child process for the store's durability test: it appends messages until killed.
        .executableTarget(name: "store-writer", dependencies: ["HearthStore"], path: "Tests/StoreWriter"),
        .testTarget(name: "HearthHubTests", dependencies: ["HearthCore", "HearthHub", "Hearth", "HubEmulator", "HearthTestSupport"]),
        .testTarget(name: "HearthCoreTests", dependencies: ["HearthCore", "HearthTestSupport"]),
        .testTarget(name: "HearthFormatsTests", dependencies: ["HearthCore", "HearthFormats", "HearthTestSupport"]),
        .testTarget(name: "HearthKernelsTests", dependencies: ["HearthCore", "HearthFormats", "HearthKernels", "HearthTestSupport"]),
        .testTarget(name: "HearthTokenizersTests", dependencies: ["HearthCore", "HearthFormats", "HearthTokenizers", "HearthTestSupport"]),
        .testTarget(name: "HearthTemplatesTests", dependencies: ["HearthCore", "HearthTemplates", "HearthTestSupport"]),
        .testTarget(name: "HearthConstraintsTests", dependencies: ["HearthCore", "HearthConstraints", "HearthTestSupport"]),
        .testTarget(name: "HearthCLITests", dependencies: ["HearthCore", "HearthFormats", "HearthConstraints", "HearthTestSupport"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthCore", "HearthFormats", "HearthEngine", "HearthTemplates", "Hearth", "HearthTestSupport"]),
        .testTarget(name: "HearthSpeechTests", dependencies: ["HearthCore", "HearthFormats", "HearthSpeech", "HearthTestSupport"]),
        .testTarget(name: "HearthTests", dependencies: ["Hearth", "HearthTestSupport"]),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthStore", "HearthStorePostgres", "Hearth", "HubEmulator", "HearthTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Run by WebUITests and the Python client tests with python3, not built.
            exclude: ["web_ui_test.py", "python_clients.py"]
        ),
        // GRDB too, to look at the file from outside the store (integrity, pragmas, foreign files);
        // the PostgreSQL database is looked at with psql (HearthTestSupport's PostgresTestServer).
        .testTarget(
            name: "HearthStoreTests",
            dependencies: [
                "HearthCore", "HearthStore", "HearthStorePostgres", "HearthTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)

// The tests run the products' optimised code; their own code is compiled without optimisation,
// in a third less time.
for target in package.targets where target.type == .test {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-Onone"])]
}
