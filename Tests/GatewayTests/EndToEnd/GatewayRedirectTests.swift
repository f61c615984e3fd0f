import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// A proxy passes redirects through: the gateway's Moya sessions do not follow them (Moya's default does).
@Suite(.serialized) struct GatewayRedirectTests {
    @Test func upstreamRedirectsReachTheClientUnfollowed() async throws {
        let upstream = try await RedirectingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: up, match: { path_prefix: /r }, upstream: up }
                """)
        let client = HTTPClient()
        for status in [301, 302, 303, 307, 308] {
            let response = try await client.execute(
                HTTPClientRequest(
                    method: .post, url: "\(gateway.url)/r/\(status)",
                    body: .bytes(Array("payload".utf8))))
            #expect(response.status == status)
            #expect(response.headers.first(name: "Location") == "/r/elsewhere")
        }
        #expect(
            upstream.paths == ["/r/301", "/r/302", "/r/303", "/r/307", "/r/308"],
            "the redirect target was never requested")
        gateway.stop()
        await upstream.shutdown()
    }
}

/// Answers `/r/NNN` with status NNN and `Location: LOCATION` (`/r/elsewhere` unless told); records the paths it is
/// asked for and the `Authorization` each request carried.
final class RedirectingUpstream: HTTPServerHandler {
    private let serving = LoopbackServer()
    private let location: String
    private let seen = Locked<[(path: String, authorization: String?)]>([])
    var port: Int { serving.port }
    var paths: [String] { seen.withLock { $0.map(\.path) } }
    var authorizations: [String?] { seen.withLock { $0.map(\.authorization) } }

    private init(location: String) { self.location = location }

    /// Starts the upstream on a loopback port; with `tls`, over TLS only.
    static func start(location: String = "/r/elsewhere", tls: TLSServerConfiguration? = nil) async throws
        -> RedirectingUpstream
    {
        let upstream = RedirectingUpstream(location: location)
        try await upstream.serving.start(upstream, tls: tls)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        _ = try? await request.body.collect(upTo: 1 << 16)
        let path = String(request.head.path)
        let authorization = request.head.headers.first(name: "Authorization")
        seen.withLock { $0.append((path, authorization)) }
        let status = Int(path.split(separator: "/").last ?? "") ?? 200
        return HTTPServerResponse(status: status, headers: ["Location": location, "Content-Length": "0"], body: [])
    }
}
