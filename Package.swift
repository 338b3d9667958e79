// swift-tools-version: 6.0
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
    ],
    targets: [
        .target(name: "CHearthKernels"),
        .target(name: "HearthFormats"),
        .target(name: "HearthKernels", dependencies: ["CHearthKernels", "HearthFormats"]),
        .target(name: "HearthTokenizers", dependencies: ["HearthFormats"]),
        .target(name: "HearthTemplates", dependencies: ["HearthFormats"]),
        .target(name: "HearthEngine", dependencies: ["HearthFormats", "HearthKernels", "HearthTokenizers", "HearthTemplates"]),
        .target(name: "Hearth", dependencies: ["HearthEngine"]),
        .executableTarget(
            name: "HearthCLI",
            dependencies: ["Hearth", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .target(name: "HearthTestSupport", path: "Tests/HearthTestSupport"),
        .testTarget(name: "HearthFormatsTests", dependencies: ["HearthFormats", "HearthTestSupport"]),
        .testTarget(name: "HearthKernelsTests", dependencies: ["HearthKernels", "HearthTestSupport"]),
        .testTarget(name: "HearthTokenizersTests", dependencies: ["HearthTokenizers", "HearthTestSupport"]),
        .testTarget(name: "HearthTemplatesTests", dependencies: ["HearthTemplates", "HearthTestSupport"]),
        .testTarget(name: "HearthCLITests", dependencies: ["HearthTestSupport"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine", "Hearth", "HearthTestSupport"]),
        .testTarget(name: "HearthTests", dependencies: ["Hearth", "HearthTestSupport"]),
    ]
)
