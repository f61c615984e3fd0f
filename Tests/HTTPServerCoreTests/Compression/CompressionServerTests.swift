import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Routes for the compression tests: a 4 KiB JSON body with a strong ETag and `Vary: Origin`, a small one, a
/// streamed text body of unknown length (and a 2 MiB one), a pre-gzipped body, 204, 304, a PNG and a
/// `no-transform` response.
struct CompressionRoutes: HTTPServerHandler {
    static let json: [UInt8] = {
        var text = "["
        var index = 0
        while text.utf8.count < 4096 - 64 {
            text += "{\"id\":\(index),\"name\":\"item \(index)\",\"ok\":true},"
            index += 1
        }
        text += "{\"id\":-1}]"
        return Array(text.utf8)
    }()
    static let streamParts = (0..<40).map { "line \($0): the quick brown fox jumps over the lazy dog\n" }
    static let pregzipped: [UInt8] = (try? Deflater.compress(json, coding: .gzip, level: 9)) ?? []

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let json: HTTPFields = ["Content-Type": "application/json"]
        switch String(request.head.path) {
        case "/json":
            return HTTPServerResponse(
                status: 200,
                headers: [
                    "Content-Type": "application/json; charset=utf-8",
                    "ETag": "\"v1\"", "Vary": "Origin"
                ], body: Self.json)
        case "/small":
            return HTTPServerResponse(status: 200, headers: json, body: Array(Self.json.prefix(100)))
        case "/stream":
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 200, headers: ["Content-Type": "text/plain"]),
                body: .stream(Self.produce(Self.streamParts.map { Array($0.utf8) })))
        case "/big-stream":
            let chunk = Array(String(repeating: "0123456789abcdef", count: 4096).utf8)
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 200, headers: ["Content-Type": "text/plain"]),
                body: .stream(Self.produce(Array(repeating: chunk, count: 32))))
        case "/pregzipped":
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"],
                body: Self.pregzipped)
        case "/no-content":
            return HTTPServerResponse(head: HTTPResponseHead(status: 204, headers: json))
        case "/not-modified":
            return HTTPServerResponse(
                head: HTTPResponseHead(
                    status: 304,
                    headers: [
                        "Content-Type": "application/json",
                        "ETag": "\"v1\""
                    ]))
        case "/png":
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "image/png"], body: Self.json)
        case "/no-transform":
            return HTTPServerResponse(
                status: 200,
                headers: [
                    "Content-Type": "application/json",
                    "Cache-Control": "no-transform"
                ], body: Self.json)
        default:
            return HTTPServerResponse(status: 404, body: Array("nope".utf8))
        }
    }

    /// A stream fed by a task, honouring back-pressure by pausing briefly when the consumer is behind.
    static func produce(_ chunks: [[UInt8]]) -> ByteStream {
        let stream = ByteStream()
        Task {
            for chunk in chunks {
                if !stream.yield(chunk) { try? await Task.sleep(for: .milliseconds(2)) }
                await Task.yield()
            }
            stream.finish()
        }
        return stream
    }
}

/// Response compression by the server (``HTTPServer/Configuration/compression``), checked with curl over
/// HTTP/1.1 and HTTP/2 and with raw requests.
@Suite(.serialized) struct CompressionServerTests {
    struct Fetched {
        var status: Int
        /// Lowercased names; repeated fields joined with ", ".
        var headers: [String: String]
        var body: [UInt8]
        var decoded: [UInt8]? { try? Inflater.decompress(body) }
    }

    static func start(minimumBytes: Int = 1024) async throws -> (HTTPServer, Int) {
        let group = try EventLoopGroup(threads: 1)
        let configuration = HTTPServer.Configuration(
            listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
            compression: CompressionPolicy(minimumBytes: minimumBytes))
        let server = HTTPServer(configuration: configuration, group: group, handler: CompressionRoutes())
        try await server.start()
        return (server, server.localAddresses[0].port)
    }

    /// Fetches with curl (no decoding by curl), the body kept as raw bytes.
    static func fetch(
        _ port: Int, _ path: String, acceptEncoding: String? = "gzip, deflate",
        _ extra: [String] = []
    ) throws -> Fetched {
        let directory = ProcessRunner.temporaryDirectory()
        let headerFile = directory + "/headers"
        let bodyFile = directory + "/body"
        var arguments = ["-s", "-D", headerFile, "-o", bodyFile, "http://127.0.0.1:\(port)\(path)"] + extra
        if let acceptEncoding { arguments += ["-H", "Accept-Encoding: \(acceptEncoding)"] }
        let result = try ProcessRunner.run("curl", arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.stderr)")
        let headerText = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        let lines = headerText.split(separator: "\r\n").map(String.init)
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        let body = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))).map { [UInt8]($0) } ?? []
        return Fetched(status: status, headers: headers, body: body)
    }

    @Test func gzipJSONDecodesToTheOriginal() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let response = try Self.fetch(port, "/json")
        #expect(response.status == 200)
        #expect(response.headers["content-encoding"] == "gzip")
        #expect(response.headers["vary"] == "Origin, Accept-Encoding")
        #expect(response.headers["etag"] == "W/\"v1\"", "a strong ETag is weakened")
        #expect(response.headers["content-length"] == String(response.body.count), "whole body: compressed length")
        #expect(response.body.count < CompressionRoutes.json.count / 2)
        #expect(response.decoded == CompressionRoutes.json)

        let curlDecoded = try ProcessRunner.run("curl", ["-s", "--compressed", "http://127.0.0.1:\(port)/json"])
        #expect(Array(curlDecoded.stdout.utf8) == CompressionRoutes.json)
    }

    struct Negotiation: Sendable, CustomTestStringConvertible {
        var acceptEncoding: String?
        var expected: String?
        var testDescription: String { "\(acceptEncoding ?? "(none)") -> \(expected ?? "identity")" }
    }

    static let negotiations: [Negotiation] = [
        Negotiation(acceptEncoding: "gzip", expected: "gzip"),
        Negotiation(acceptEncoding: "deflate", expected: "deflate"),
        Negotiation(acceptEncoding: "gzip;q=0, deflate", expected: "deflate"),
        Negotiation(acceptEncoding: "deflate;q=0.9, gzip;q=0.5", expected: "deflate"),
        Negotiation(acceptEncoding: "GZIP;Q=1.0", expected: "gzip"),
        Negotiation(acceptEncoding: "x-gzip", expected: "gzip"),
        Negotiation(acceptEncoding: "identity", expected: nil),
        Negotiation(acceptEncoding: "*", expected: "gzip"),
        Negotiation(acceptEncoding: "*;q=0", expected: nil),
        Negotiation(acceptEncoding: "*;q=0, identity", expected: nil),
        Negotiation(acceptEncoding: "*;q=0, deflate", expected: "deflate"),
        Negotiation(acceptEncoding: "identity;q=1, gzip;q=0.5", expected: nil),
        Negotiation(acceptEncoding: "br", expected: nil),
        Negotiation(acceptEncoding: nil, expected: nil)
    ]

    @Test(arguments: negotiations)
    func acceptEncodingQValues(_ case_: Negotiation) async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let response = try Self.fetch(port, "/json", acceptEncoding: case_.acceptEncoding)
        #expect(response.status == 200)
        #expect(response.headers["content-encoding"] == case_.expected)
        #expect(response.headers["vary"] == "Origin, Accept-Encoding", "the choice depends on Accept-Encoding")
        if case_.expected == nil {
            #expect(response.body == CompressionRoutes.json)
            #expect(response.headers["etag"] == "\"v1\"")
        } else {
            #expect(response.decoded == CompressionRoutes.json)
        }
    }

    @Test func responsesLeftAlone() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let small = try Self.fetch(port, "/small")
        #expect(small.headers["content-encoding"] == nil)
        #expect(small.headers["vary"] == nil)
        #expect(small.body == Array(CompressionRoutes.json.prefix(100)))

        let range = try Self.fetch(port, "/json", ["-H", "Range: bytes=0-99"])
        #expect(range.headers["content-encoding"] == nil)
        #expect(range.body == CompressionRoutes.json)

        let pre = try Self.fetch(port, "/pregzipped")
        #expect(pre.headers["content-encoding"] == "gzip")
        #expect(pre.body == CompressionRoutes.pregzipped, "not compressed twice")

        let noContent = try Self.fetch(port, "/no-content")
        #expect(noContent.status == 204)
        #expect(noContent.headers["content-encoding"] == nil)

        let notModified = try Self.fetch(port, "/not-modified")
        #expect(notModified.status == 304)
        #expect(notModified.headers["content-encoding"] == nil)
        #expect(notModified.headers["etag"] == "\"v1\"")

        let png = try Self.fetch(port, "/png")
        #expect(png.headers["content-encoding"] == nil)
        #expect(png.body == CompressionRoutes.json)

        let noTransform = try Self.fetch(port, "/no-transform")
        #expect(noTransform.headers["content-encoding"] == nil)
        #expect(noTransform.body == CompressionRoutes.json)
    }

    /// A HEAD answer has the fields its GET would have (RFC 9110 §9.3.2), as nginx gives them: with a coding
    /// accepted, `Content-Encoding`, `Vary` and the weak `ETag`, and no `Content-Length` (the compressed length is not
    /// known without compressing); without one, the identity length and `Vary`; a body too small stays as it is.
    @Test(arguments: [false, true])
    func aHeadAnswerCarriesTheFieldsItsGetWouldGet(http2: Bool) async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let version = http2 ? ["--http2-prior-knowledge"] : []
        let get = try Self.fetch(port, "/json", version)
        let head = try Self.fetch(port, "/json", ["-I"] + version)
        #expect(head.status == 200)
        for name in ["content-encoding", "vary", "etag", "content-type"] {
            #expect(head.headers[name] == get.headers[name], "\(name) as for GET")
        }
        #expect(head.headers["content-encoding"] == "gzip")
        #expect(head.headers["content-length"] == nil)
        #expect(head.headers["transfer-encoding"] == nil)

        let stream = try Self.fetch(port, "/stream", ["-I"] + version)
        #expect(stream.headers["content-encoding"] == "gzip")
        #expect(stream.headers["vary"] == "Accept-Encoding")

        let identity = try Self.fetch(port, "/json", acceptEncoding: "identity", ["-I"] + version)
        #expect(identity.headers["content-encoding"] == nil)
        #expect(identity.headers["content-length"] == String(CompressionRoutes.json.count))
        #expect(identity.headers["vary"] == "Origin, Accept-Encoding")
        #expect(identity.headers["etag"] == "\"v1\"")

        let small = try Self.fetch(port, "/small", ["-I"] + version)
        #expect(small.headers["content-encoding"] == nil)
        #expect(small.headers["content-length"] == "100")
        #expect(small.headers["vary"] == nil)
    }

    @Test func minimumSizeIsConfigurable() async throws {
        let (server, port) = try await Self.start(minimumBytes: 50)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let small = try Self.fetch(port, "/small")
        #expect(small.headers["content-encoding"] == "gzip")
        #expect(small.decoded == Array(CompressionRoutes.json.prefix(100)))
    }

    @Test func streamedBodiesAreCompressedChunked() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let response = try Self.fetch(port, "/stream")
        #expect(response.headers["content-encoding"] == "gzip")
        #expect(response.headers["transfer-encoding"] == "chunked")
        #expect(response.headers["content-length"] == nil)
        #expect(response.headers["vary"] == "Accept-Encoding")
        #expect(response.decoded == Array(CompressionRoutes.streamParts.joined().utf8))

        let big = try Self.fetch(port, "/big-stream", acceptEncoding: "deflate")
        #expect(big.headers["content-encoding"] == "deflate")
        let expected = Array(String(repeating: "0123456789abcdef", count: 4096 * 32).utf8)
        #expect(big.decoded == expected)
        #expect(big.body.count < expected.count / 50)

        let identity = try Self.fetch(port, "/stream", acceptEncoding: nil)
        #expect(identity.headers["content-encoding"] == nil)
        #expect(identity.body == Array(CompressionRoutes.streamParts.joined().utf8))
    }

    @Test func rawHTTP1RequestGetsGzip() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "GET /json HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0.8, identity;q=0.5\r\nConnection: close\r\n\r\n")
        let (bytes, _) = client.readAll(timeout: 5)
        let separator = Array("\r\n\r\n".utf8)
        let split = try #require(bytes.indices.first { bytes[$0...].starts(with: separator) })
        let head = String(decoding: bytes[..<split], as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(head.contains("\r\nContent-Encoding: gzip"))
        let body = Array(bytes[(split + 4)...])
        #expect(head.contains("\r\nContent-Length: \(body.count)"))
        #expect(try Inflater.decompress(body) == CompressionRoutes.json)
    }

    @Test func http2ResponsesAreCompressed() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let whole = try Self.fetch(port, "/json", ["--http2-prior-knowledge"])
        #expect(whole.status == 200)
        #expect(whole.headers["content-encoding"] == "gzip")
        #expect(whole.headers["vary"] == "Origin, Accept-Encoding")
        #expect(whole.headers["content-length"] == String(whole.body.count))
        #expect(whole.decoded == CompressionRoutes.json)

        let streamed = try Self.fetch(port, "/big-stream", ["--http2-prior-knowledge"])
        #expect(streamed.headers["content-encoding"] == "gzip")
        #expect(streamed.decoded == Array(String(repeating: "0123456789abcdef", count: 4096 * 32).utf8))

        let refused = try Self.fetch(port, "/json", acceptEncoding: "gzip;q=0", ["--http2-prior-knowledge"])
        #expect(refused.headers["content-encoding"] == nil)
        #expect(refused.body == CompressionRoutes.json)

    }
}

/// A policy offering a coding zlib cannot produce falls back to identity instead of breaking the response.
@Suite(.serialized) struct CompressionUnsupportedCodingTests {
    @Test func unsupportedCodingIsSentAsIdentity() async throws {
        let group = try EventLoopGroup(threads: 1)
        let configuration = HTTPServer.Configuration(
            listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
            compression: CompressionPolicy(codings: [ContentCoding(rawValue: "br"), .gzip]))
        let server = HTTPServer(configuration: configuration, group: group, handler: CompressionRoutes())
        try await server.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let port = server.localAddresses[0].port
        for path in ["/json", "/stream"] {
            let response = try CompressionServerTests.fetch(port, path, acceptEncoding: "br")
            #expect(response.status == 200)
            #expect(response.headers["content-encoding"] == nil)
        }
        let json = try CompressionServerTests.fetch(port, "/json", acceptEncoding: "br")
        #expect(json.body == CompressionRoutes.json)
        let gzip = try CompressionServerTests.fetch(port, "/json", acceptEncoding: "gzip")
        #expect(gzip.decoded == CompressionRoutes.json)
    }
}
