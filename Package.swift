// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "MoyaGateway",
    products: [
        .library(name: "Moya", targets: ["Moya"]),
        .executable(name: "moya-gateway", targets: ["MoyaGatewayCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // C libraries from Debian, imported through shims for the macros Swift cannot see.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Event loops, sockets, timers, TLS.
        .target(name: "NetCore", dependencies: ["COpenSSL"]),
        // Wire formats: HTTP/1.1 codec, HTTP/2 over nghttp2, gzip/deflate over zlib. No I/O.
        .target(name: "HTTPWire", dependencies: ["CNghttp2", "CZlib"]),
        .target(name: "HTTPServer", dependencies: ["NetCore", "HTTPWire"]),
        .target(name: "HTTPClient", dependencies: ["NetCore", "HTTPWire"]),
        .target(name: "Moya", dependencies: ["HTTPClient", "HTTPWire"]),
        .target(name: "Gateway", dependencies: [
            "Moya", "HTTPServer", "HTTPClient", "HTTPWire", "NetCore",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Yams", package: "Yams"),
        ]),
        .executableTarget(name: "MoyaGatewayCLI", dependencies: [
            "Gateway",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        .testTarget(name: "HTTPWireTests", dependencies: ["HTTPWire"]),
        .testTarget(name: "MoyaTests", dependencies: ["Moya"]),
    ]
)
