import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// The gateway speaking HTTP/2 to upstreams: h2c with prior knowledge (`pool: { http2: always }`) and h2 negotiated
/// by ALPN over TLS (`http2: auto`), against our own server recording what it received.
@Suite(.serialized) struct GatewayHTTP2UpstreamTests {
    @Test func proxiesOverH2cAndOverTLSNegotiatedH2() async throws {
        let (ca, cert, key) = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory())
        let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
        let cleartextRecorder = RequestRecorder()
        let cleartext = HTTPServer(
            configuration: .init(listen: [loopback]), group: try EventLoopGroup(threads: 1),
            handler: cleartextRecorder)
        try await cleartext.start()
        let tlsRecorder = RequestRecorder()
        let tls = TLSServerConfiguration(
            defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key))
        let secure = HTTPServer(
            configuration: .init(listen: [], tlsListen: [loopback], tls: tls),
            group: try EventLoopGroup(threads: 1), handler: tlsRecorder)
        try await secure.start()
        let config = """
            server:
              listen: ["127.0.0.1:PORT"]
              threads: 1
            admin:
              listen: "127.0.0.1:ADMIN"
            upstreams:
              plain:
                base_url: http://127.0.0.1:\(cleartext.localAddresses[0].port)
                pool: { http2: always }
              secure:
                base_url: https://127.0.0.1:\(secure.tlsLocalAddresses[0].port)
                tls: { ca_file: \(ca) }
                pool: { http2: auto }
            routes:
              - name: plain
                match: { path_prefix: /plain }
                upstream: plain
                rewrite: { strip_prefix: /plain }
              - name: secure
                match: { path_prefix: /secure }
                upstream: secure
                rewrite: { strip_prefix: /secure }
            """
        let gateway = try await GatewayProcess(config: config)
        let client = HTTPClient()
        let url = gateway.url
        let results = try await withThrowingTaskGroup(of: (String, Int, String).self) { group in
            for index in 0..<10 {
                for prefix in ["plain", "secure"] {
                    group.addTask {
                        let response = try await client.execute(
                            HTTPClientRequest(url: "\(url)/\(prefix)/item/\(index)"))
                        return (prefix, response.status, String(decoding: response.body, as: UTF8.self))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 20)
        for (prefix, status, body) in results {
            #expect(status == 200, "\(prefix): \(body)")
            #expect(body.hasPrefix("GET /item/"), "\(prefix): \(body)")
        }
        #expect(cleartextRecorder.requests.count == 10)
        #expect(tlsRecorder.requests.count == 10)
        #expect(cleartextRecorder.requests.allSatisfy { $0.head.version == .http2 }, "h2c with prior knowledge")
        #expect(tlsRecorder.requests.allSatisfy { $0.head.version == .http2 }, "h2 by ALPN")
        #expect(cleartext.openConnections == 1, "one multiplexed connection per upstream")
        #expect(secure.openConnections == 1)
        gateway.stop()
        await cleartext.shutdown(timeout: .seconds(1))
        await secure.shutdown(timeout: .seconds(1))
    }
}
