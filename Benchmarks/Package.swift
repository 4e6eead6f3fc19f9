// swift-tools-version:6.1
// The benchmark suites of the log's hot paths, the sync call and the peer comparison (PostgreSQL, Redis Streams,
// SQLite), kept in their own package so that package-benchmark, the peers' clients and SQLite never reach a user's
// build.
// Run from this directory: `swift package benchmark`, and `./peers.sh` for the peer comparison.
import PackageDescription

let package = Package(
    name: "ParleyBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "parley-peers", targets: ["Peers"])
    ],
    dependencies: [
        .package(name: "Parley", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            path: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "Peers",
            dependencies: [
                "CSQLite",
                .product(name: "Workloads", package: "Parley"),
                .product(name: "Projections", package: "Parley"),
                .product(name: "EventLog", package: "Parley"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Peers"
        ),
        .executableTarget(
            name: "LogHotPaths",
            dependencies: [
                .product(name: "EventLog", package: "Parley"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "LogHotPaths",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ProjectionHotPaths",
            dependencies: [
                .product(name: "Projections", package: "Parley"),
                .product(name: "EventLog", package: "Parley"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "ProjectionHotPaths",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SyncQueries",
            dependencies: [
                .product(name: "Workloads", package: "Parley"),
                .product(name: "Projections", package: "Parley"),
                .product(name: "EventLog", package: "Parley"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "SyncQueries",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
