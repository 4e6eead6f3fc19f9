// swift-tools-version:6.1
// libFuzzer targets for the log's decoder and recovery and for the import readers, kept in their own package so
// that the sanitizer builds never reach a user's build or the root package's `swift build` / `swift test`.
// Build and run them with `Tests/Fuzz/run.sh [SECONDS]`; it passes `-sanitize=fuzzer,address` to every module, so that
// the library code is instrumented and not only these harnesses.
import PackageDescription

let package = Package(
    name: "ParleyFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Parley", path: "../..")
    ],
    targets: [
        .target(name: "CFuzzerDriver", path: "CFuzzerDriver"),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "EventLog", package: "Parley"), .product(name: "Projections", package: "Parley"),
            ],
            path: "FuzzSupport"
        ),
        .executableTarget(
            name: "FuzzBatch",
            dependencies: ["FuzzSupport", .product(name: "EventLog", package: "Parley")],
            path: "FuzzBatch"
        ),
        .executableTarget(
            name: "FuzzSegment",
            dependencies: ["FuzzSupport", .product(name: "EventLog", package: "Parley")],
            path: "FuzzSegment"
        ),
        .executableTarget(
            name: "FuzzJSONLines",
            dependencies: [
                "FuzzSupport", .product(name: "Interchange", package: "Parley"),
                .product(name: "Projections", package: "Parley"),
            ],
            path: "FuzzJSONLines"
        ),
        .executableTarget(
            name: "FuzzFirebase",
            dependencies: [
                "FuzzSupport", .product(name: "Interchange", package: "Parley"),
                .product(name: "Projections", package: "Parley"),
            ],
            path: "FuzzFirebase"
        ),
    ],
    swiftLanguageModes: [.v6]
)
