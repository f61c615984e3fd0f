// swift-tools-version:6.1
import PackageDescription

/// Nonisolated async functions run on their caller's executor (SE-0461) instead of hopping to the generic one: a request
/// that stays on its event loop crosses a dozen async calls without a task switch at each (the gateway's proxy path:
/// 31 -> 10 per request). Code written against `Moya` compiles unchanged (checked across modules built without it).
let runOnCallersExecutor: [SwiftSetting] = [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]

let package = Package(
    name: "MoyaGateway",
    products: [
        .library(name: "Moya", targets: ["Moya"]),
        .executable(name: "moya-gateway", targets: ["MoyaGatewayCLI"]),
        .executable(name: "hello-server", targets: ["HelloServer"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // `Deque`: the FIFO queues of body chunks and of exchanges waiting for a connection.
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        // `swift package generate-documentation --target Moya` (scripts/docs.sh): a command plugin, built only when
        // the documentation is; `swift build` compiles nothing of it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // C libraries from Debian, imported through shims for the macros Swift cannot see.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Linux headers Glibc does not export (epoll, eventfd) and accessors for packed structs.
        .target(name: "CNetShims"),
        // The lock every layer above uses: `Synchronization.Mutex`, or one ThreadSanitizer sees (scripts/tsan.sh).
        .target(name: "Locking"),
        // The first-in, first-out ring of the loop's jobs, HTTP/2 events and arrived requests: elements moved, not copied.
        .target(name: "RingQueue"),
        // Event loops, sockets, timers, TLS.
        .target(
            name: "NetCore",
            dependencies: [
                "CNetShims", "COpenSSL", "Locking", "RingQueue",
                .product(name: "DequeModule", package: "swift-collections")
            ],
            swiftSettings: runOnCallersExecutor),
        // Wire formats: HTTP/1.1 codec, HTTP/2 over nghttp2, gzip/deflate over zlib. No I/O.
        .target(
            name: "HTTPWire",
            dependencies: ["CNghttp2", "CZlib", "Locking", "RingQueue"]),
        // What the HTTP/2 client and server connections share: an HTTP2Session driven over a Connection.
        .target(name: "HTTP2Transport", dependencies: ["NetCore", "HTTPWire"], swiftSettings: runOnCallersExecutor),
        .target(
            name: "HTTPServerCore", dependencies: ["NetCore", "HTTPWire", "HTTP2Transport", "Locking", "RingQueue"],
            swiftSettings: runOnCallersExecutor),
        .target(
            name: "HTTPClientCore",
            dependencies: [
                "NetCore", "HTTPWire", "HTTP2Transport", "Locking",
                .product(name: "DequeModule", package: "swift-collections")
            ],
            swiftSettings: runOnCallersExecutor),
        .target(
            name: "Moya", dependencies: ["HTTPClientCore", "HTTPWire", "Locking"], swiftSettings: runOnCallersExecutor),
        .target(
            name: "Gateway",
            dependencies: [
                "Moya", "HTTPServerCore", "HTTPClientCore", "HTTPWire", "NetCore", "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ], swiftSettings: runOnCallersExecutor),
        .executableTarget(
            name: "MoyaGatewayCLI",
            dependencies: [
                "Gateway",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log")
            ]),

        // A hello-world server for benchmarks against nginx `return 200`.
        .executableTarget(
            name: "HelloServer", dependencies: ["HTTPClientCore", "HTTPServerCore", "HTTPWire", "NetCore"]),
        // Client benchmark (Benchmarks/run.sh): N keep-alive connections looping HTTPClient.execute for D seconds.
        .executableTarget(
            name: "ClientBench", dependencies: ["HTTPClientCore", "HTTPWire", "NetCore"],
            path: "Benchmarks/ClientBench"),
        // Moya overhead benchmark (Benchmarks/MoyaBench/run.sh): stubbed requests, and MoyaProvider vs HTTPClient.execute.
        .executableTarget(
            name: "MoyaBench", dependencies: ["Moya", "HTTPClientCore", "HTTPWire", "NetCore"],
            path: "Benchmarks/MoyaBench", exclude: ["run.sh"]),
        // The gateway's handler driven in-process (Benchmarks/GatewayBench): CPU per request without client sockets.
        .executableTarget(
            name: "GatewayBench", dependencies: ["Gateway", "HTTPServerCore", "HTTPWire", "NetCore"],
            path: "Benchmarks/GatewayBench"),
        .executableTarget(
            name: "MoyaSample", dependencies: ["Moya", "HTTPServerCore", "HTTPWire", "NetCore"],
            path: "Examples/MoyaSample"),

        // Coverage-guided fuzz targets (docs/fuzzing.md). Built normally, `MoyaFuzz TARGET FILE...` runs inputs once (a
        // replay); scripts/fuzz.sh builds them with `-sanitize=fuzzer,address -D MOYA_FUZZING` for libFuzzer.
        .target(name: "CFuzzerDriver", path: "Fuzz/CFuzzerDriver"),
        .target(name: "FuzzTargets", dependencies: ["Gateway", "HTTPClientCore", "HTTPWire"], path: "Fuzz/FuzzTargets"),
        .executableTarget(name: "MoyaFuzz", dependencies: ["CFuzzerDriver", "FuzzTargets"], path: "Fuzz/MoyaFuzz"),

        // Raw sockets, process and certificate helpers shared by the test suites.
        .target(name: "TestSupport", path: "Tests/TestSupport", exclude: ["python"]),
        .testTarget(name: "HTTPWireTests", dependencies: ["HTTPWire"]),
        // Every committed fuzz corpus (Fuzz/corpus) through its target once, invariants included.
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets"]),
        .testTarget(name: "RingQueueTests", dependencies: ["RingQueue"]),
        .testTarget(name: "NetCoreTests", dependencies: ["Locking", "NetCore", "RingQueue", "TestSupport"]),
        .testTarget(
            name: "HTTPServerCoreTests",
            dependencies: ["Locking", "HTTPServerCore", "NetCore", "HTTPWire", "TestSupport"],
            exclude: ["HTTP2/h2"]),
        .testTarget(
            name: "HTTPClientCoreTests",
            dependencies: ["Locking", "HTTPClientCore", "HTTPServerCore", "NetCore", "HTTPWire", "TestSupport"]),
        .testTarget(
            name: "MoyaTests", dependencies: ["Moya", "HTTPServerCore", "HTTPClientCore", "NetCore", "TestSupport"]),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "HTTPServerCore", "HTTPClientCore", "HTTPWire", "Locking", "NetCore", "TestSupport",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ],
            exclude: ["EndToEnd/faults"])
    ]
)
