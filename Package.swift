// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EventLog", targets: ["EventLog"]),
        .library(name: "Projections", targets: ["Projections"]),
        .library(name: "Interchange", targets: ["Interchange"]),
        .library(name: "Workloads", targets: ["Workloads"]),
        .library(name: "ParleyKit", targets: ["ParleyKit"]),
        .executable(name: "parley", targets: ["EngineCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Already in the graph through async-http-client and jwt-kit: named here for the push providers' TLS trust
        // and the tests' local APNs server and certificates.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.36.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.15.0"),
        // The API contract's generated code (Sources/ParleyAPI/generate.sh) and its transports.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .target(name: "CCRC32C"),
        .target(name: "ParleyTime"),
        // The API contract: openapi.yaml and the types generated from it, shared by the server and ParleyKit.
        .target(
            name: "ParleyAPI",
            dependencies: ["ParleyTime", .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "generate.sh"]
        ),
        .target(
            name: "ParleyKit",
            dependencies: [
                "ParleyAPI",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(
                    name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client",
                    condition: .when(platforms: [.linux])),
                .product(
                    name: "OpenAPIURLSession", package: "swift-openapi-urlsession",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
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
            dependencies: [
                "EventLog", "ParleyTime", .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "Interchange", dependencies: ["Projections", "EventLog"]),
        .target(name: "Workloads", dependencies: ["Projections", "EventLog", "ReplicatedLog"]),
        .target(
            name: "Delivery",
            dependencies: [
                "Projections", "EventLog", "NATSClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "Server",
            dependencies: [
                "Delivery",
                "ParleyAPI",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                "Projections",
                "EventLog",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "EngineCLI",
            dependencies: [
                "Server",
                "Delivery",
                "Interchange",
                "Workloads",
                "Projections",
                "EventLog",
                "ReplicatedLog",
                "NATSClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // An example app: a terminal chat on ParleyKit.
        .executableTarget(
            name: "ChatCLI",
            dependencies: [
                "ParleyKit", "ParleyAPI", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/ChatCLI"
        ),
        .target(
            name: "NATSClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "ReplicatedLog",
            dependencies: [
                "EventLog", "NATSClient", "Projections",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "ParleyTestSupport",
            dependencies: [
                "EventLog", "Projections", "NATSClient", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"),
        // The crash tests' writer: a test-only executable the tests run and SIGKILL, and the record recipe it
        // shares with them.
        .target(name: "CrashRecipe", dependencies: ["EventLog"], path: "Tests/CrashRecipe"),
        .executableTarget(
            name: "CrashWriter",
            dependencies: [
                "CrashRecipe", "EventLog", "Projections",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/CrashWriter"
        ),
        .testTarget(
            name: "EventLogTests", dependencies: ["EventLog", "ParleyTestSupport", "CrashRecipe", "CrashWriter"]),
        .testTarget(
            name: "ProjectionTests",
            dependencies: ["Projections", "EventLog", "ParleyTestSupport", "CrashRecipe", "CrashWriter"]),
        .testTarget(
            name: "InterchangeTests", dependencies: ["Interchange", "Projections", "EventLog", "ParleyTestSupport"]),
        .testTarget(
            name: "WorkloadsTests", dependencies: ["Workloads", "Projections", "EventLog", "ParleyTestSupport"]),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "Server", "ParleyAPI", "Delivery", "Projections", "EventLog", "ReplicatedLog", "NATSClient",
                "ParleyTestSupport",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "EngineCLITests",
            dependencies: [
                "Interchange", "Projections", "EventLog", "ReplicatedLog", "NATSClient", "ParleyTestSupport",
            ]),
        .testTarget(
            name: "NATSClientTests",
            dependencies: [
                "NATSClient", "EventLog", "ParleyTestSupport", .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "DeliveryTests",
            dependencies: [
                "Delivery", "Projections", "EventLog", "NATSClient", "ReplicatedLog", "ParleyTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .testTarget(
            name: "ReplicatedLogTests", dependencies: ["ReplicatedLog", "EventLog", "NATSClient", "ParleyTestSupport"]),
        .testTarget(
            name: "ParleyKitTests",
            dependencies: [
                "ParleyKit", "ParleyAPI", "ParleyTestSupport", "Server",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
