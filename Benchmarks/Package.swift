// swift-tools-version:6.1
// The benchmark suites of the log's hot paths, kept in their own package so that package-benchmark never
// reaches a user's build. Run from this directory: `swift package benchmark`.
import PackageDescription

let package = Package(
    name: "ParleyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Parley", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
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
    ],
    swiftLanguageModes: [.v6]
)
