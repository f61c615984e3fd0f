import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// `server.compression` in the real `moya-gateway` binary: a stub route with a 4 KiB JSON body, and a proxied
/// upstream whose pre-gzipped body must pass through untouched. Checked with curl over HTTP/1.1 and HTTP/2.
@Suite(.serialized) struct GatewayCompressionTests {
    static let json: String = {
        var text = "["
        var index = 0
        while text.utf8.count < 4096 - 48 {
            text += "{\"id\":\(index),\"name\":\"user \(index)\"},"
            index += 1
        }
        return text + "{\"id\":-1}]"
    }()

    /// An upstream answering `/gz` with a gzip-encoded JSON body and anything else with the same JSON as identity.
    struct EncodedUpstream: HTTPServerHandler {
        static let gzipped: [UInt8] = (try? Deflater.compress(Array(json.utf8), coding: .gzip, level: 9)) ?? []

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            if request.head.path == "/gz" {
                return HTTPServerResponse(
                    status: 200,
                    headers: [
                        "Content-Type": "application/json",
                        "Content-Encoding": "gzip"
                    ], body: Self.gzipped)
            }
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
        }
    }

    static func config(upstreamPort: Int, compression: String) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          compression: \(compression)
        admin:
          listen: "127.0.0.1:ADMIN"
        upstreams:
          stubbed:
            stub: { status: 200, headers: { Content-Type: application/json }, body: '\(json)' }
          origin:
            base_url: http://127.0.0.1:\(upstreamPort)
        routes:
          - name: stubbed
            match: { path: /stub }
            upstream: stubbed
          - name: origin
            match: { path_prefix: /origin }
            upstream: origin
            rewrite: { strip_prefix: /origin }
        """
    }

    struct Fetched {
        var headers: [String: String]
        var body: [UInt8]
    }

    /// curl without decoding; header names lowercased.
    static func fetch(_ url: String, _ extra: [String]) throws -> Fetched {
        let directory = ProcessRunner.temporaryDirectory()
        let headerFile = directory + "/headers"
        let bodyFile = directory + "/body"
        let result = try ProcessRunner.run("curl", ["-s", "-D", headerFile, "-o", bodyFile, url] + extra)
        #expect(result.status == 0, "curl: \(result.stderr)")
        var headers: [String: String] = [:]
        let text = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let body = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))).map { [UInt8]($0) } ?? []
        return Fetched(headers: headers, body: body)
    }

    static func startUpstream() async throws -> HTTPServer {
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: group, handler: EncodedUpstream())
        try await server.start()
        return server
    }

    @Test func stubAndProxiedBodiesAreCompressedAndPreEncodedOnesPassThrough() async throws {
        let upstream = try await Self.startUpstream()
        defer { Task { await upstream.shutdown(timeout: .seconds(1)) } }
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.localAddresses[0].port,
                compression: "{ gzip: true, min_bytes: 1024 }"))
        let original = Array(Self.json.utf8)

        let stub = try Self.fetch("\(gateway.url)/stub", ["-H", "Accept-Encoding: gzip"])
        #expect(stub.headers["content-encoding"] == "gzip")
        #expect(stub.headers["vary"] == "Accept-Encoding")
        #expect(try Inflater.decompress(stub.body) == original)

        let curlDecoded = try ProcessRunner.run("curl", ["-s", "--compressed", "\(gateway.url)/stub"])
        #expect(curlDecoded.stdout == Self.json)

        let deflate = try Self.fetch("\(gateway.url)/stub", ["-H", "Accept-Encoding: gzip;q=0, deflate"])
        #expect(deflate.headers["content-encoding"] == "deflate")
        #expect(try Inflater.decompress(deflate.body) == original)

        let plain = try Self.fetch("\(gateway.url)/stub", [])
        #expect(plain.headers["content-encoding"] == nil)
        #expect(plain.body == original)

        // A HEAD answer has its GET's fields: the coding, and no length (not known without compressing); without
        // a coding accepted, the identity length.
        for path in ["/stub", "/origin/plain"] {
            let head = try Self.fetch("\(gateway.url)\(path)", ["-I", "-H", "Accept-Encoding: gzip"])
            #expect(head.headers["content-encoding"] == "gzip", "\(path)")
            #expect(head.headers["content-length"] == nil, "\(path)")
            let identity = try Self.fetch("\(gateway.url)\(path)", ["-I"])
            #expect(identity.headers["content-encoding"] == nil, "\(path)")
            #expect(identity.headers["content-length"] == String(original.count), "\(path)")
        }

        let proxied = try Self.fetch("\(gateway.url)/origin/plain", ["-H", "Accept-Encoding: gzip"])
        #expect(proxied.headers["content-encoding"] == "gzip")
        #expect(try Inflater.decompress(proxied.body) == original)

        let preEncoded = try Self.fetch("\(gateway.url)/origin/gz", ["-H", "Accept-Encoding: gzip"])
        #expect(preEncoded.headers["content-encoding"] == "gzip")
        #expect(preEncoded.body == EncodedUpstream.gzipped, "passed through as the upstream sent it")

        let h2 = try Self.fetch("\(gateway.url)/stub", ["--http2-prior-knowledge", "-H", "Accept-Encoding: gzip"])
        #expect(h2.headers["content-encoding"] == "gzip")
        #expect(try Inflater.decompress(h2.body) == original)
        gateway.stop()
    }

    /// `compression.min_bytes`: a body of known length below it goes out as it is, one of that length or more is
    /// compressed, stubbed or proxied.
    @Test func bodiesBelowMinBytesAreSentAsTheyAre() async throws {
        let upstream = try await Self.startUpstream()
        defer { Task { await upstream.shutdown(timeout: .seconds(1)) } }
        let original = Array(Self.json.utf8)
        let length = original.count
        for (minBytes, compressed) in [("8KiB", false), ("\(length + 1)", false), ("\(length)", true), ("1KiB", true)] {
            let gateway = try await GatewayProcess(
                config: Self.config(
                    upstreamPort: upstream.localAddresses[0].port,
                    compression: "{ gzip: true, min_bytes: \(minBytes) }"))
            for path in ["/stub", "/origin/plain"] {
                let fetched = try Self.fetch("\(gateway.url)\(path)", ["-H", "Accept-Encoding: gzip"])
                #expect(
                    fetched.headers["content-encoding"] == (compressed ? "gzip" : nil), "min_bytes \(minBytes) \(path)")
                #expect(
                    (compressed ? try Inflater.decompress(fetched.body) : fetched.body) == original,
                    "min_bytes \(minBytes) \(path)")
            }
            gateway.stop()
        }
    }

    @Test func compressionOffSendsIdentity() async throws {
        let upstream = try await Self.startUpstream()
        defer { Task { await upstream.shutdown(timeout: .seconds(1)) } }
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.localAddresses[0].port,
                compression: "{ gzip: false }"))
        let stub = try Self.fetch("\(gateway.url)/stub", ["-H", "Accept-Encoding: gzip"])
        #expect(stub.headers["content-encoding"] == nil)
        #expect(stub.body == Array(Self.json.utf8))
        gateway.stop()
    }
}
