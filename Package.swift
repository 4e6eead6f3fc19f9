// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EventLog", targets: ["EventLog"]),
        .library(name: "Projections", targets: ["Projections"]),
        .executable(name: "parley", targets: ["EngineCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "CCRC32C"),
        .target(
            name: "EventLog",
            dependencies: [
                "CLZ4",
                "CCRC32C",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "Projections",
            dependencies: ["EventLog", .product(name: "DequeModule", package: "swift-collections")]
        ),
        .executableTarget(
            name: "EngineCLI",
            dependencies: [
                "Projections",
                "EventLog",
                "CLZ4",
                "CSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "ParleyTestSupport", dependencies: ["EventLog"], path: "Tests/TestSupport"),
        .testTarget(name: "EventLogTests", dependencies: ["EventLog", "ParleyTestSupport"]),
        .testTarget(name: "ProjectionTests", dependencies: ["Projections", "EventLog", "ParleyTestSupport"]),
        .testTarget(name: "EngineCLITests", dependencies: ["Projections", "EventLog", "ParleyTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
