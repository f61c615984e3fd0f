import Foundation
import HTTPClientCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// The gateway is never an open proxy, end to end: a trap listener on 127.0.0.2 stands for a host the gateway must
/// never reach, and every trick that names it (docs/reliability.md SEC-04, SSRF-01, SSRF-02, SSRF-07) leaves it at zero
/// connections while the configured upstreams keep their own traffic.
@Suite(.serialized) struct GatewayOpenProxyTests {
    /// With `caFile`, the redirecting upstream is `https://localhost` verified with that CA.
    static func config(echoPort: Int, redirectPort: Int, caFile: String? = nil) -> String {
        """
        \(GatewayProcess.listeners)
        upstreams:
          echo: { base_url: "http://127.0.0.1:\(echoPort)" }
          redirecting:
            base_url: "\(caFile == nil ? "http://127.0.0.1" : "https://localhost"):\(redirectPort)"
            access_token: { type: bearer, token: "${UP_TOKEN}" }
        \(caFile.map { "    tls: { ca_file: \($0) }" } ?? "")
        routes:
          - { name: echo, match: { path_prefix: /echo }, upstream: echo }
          - { name: redirecting, match: { path_prefix: /r }, upstream: redirecting }
        """
    }

    /// SEC-04: an upstream that injects a credential answers with a redirect to the trap. The redirect goes back to
    /// the client as it is; the gateway follows none of them, so the credential goes nowhere else.
    /// Over an HTTPS upstream too: the credential travels encrypted to its upstream and nowhere else.
    @Test(arguments: [false, true])
    func aRedirectToAnotherHostIsNotFollowedWithTheCredential(upstreamTLS: Bool) async throws {
        let (trap, _, redirecting, gateway) = try await Self.start(redirectingToTrap: true, upstreamTLS: upstreamTLS)
        let client = HTTPClient()
        for (method, status) in [(HTTPMethod.get, 302), (.get, 301), (.post, 307), (.put, 308), (.get, 303)] {
            let body: HTTPClientRequest.Body = method == .get ? .none : .bytes(Array("x".utf8))
            let response = try await client.execute(
                HTTPClientRequest(
                    method: method, url: "\(gateway.url)/r/\(status)",
                    body: body))
            #expect(response.status == status)
            #expect(response.headers.first(name: "Location") == "http://\(trap.authority)/steal")
        }
        #expect(redirecting.paths == ["/r/302", "/r/301", "/r/307", "/r/308", "/r/303"])
        #expect(
            redirecting.authorizations.allSatisfy { $0 == "Bearer sec04-token" },
            "the credential reached its own upstream")
        #expect(trap.connections() == 0, "the gateway followed a redirect to another host")
        _ = try RawClient(port: trap.port, host: trap.host)
        #expect(trap.connections() == 1, "the trap counts a connection made to it")
        gateway.stop()
        await redirecting.shutdown()
    }

    /// SSRF-01, SSRF-02: absolute-form (with the trap's `Host` or the gateway's own), authority-form (`CONNECT`) and
    /// asterisk-form targets naming the trap are all refused with a 4xx; nothing is forwarded anywhere.
    @Test func requestTargetsNamingAnotherHostNeverReachIt() async throws {
        let (trap, echo, redirecting, gateway) = try await Self.start()
        let closing = "Host: \(trap.authority)\r\nConnection: close\r\n\r\n"
        let connect = try Self.exchange(port: gateway.port, "CONNECT \(trap.authority) HTTP/1.1\r\n" + closing)
        #expect(["400", "405"].contains(Self.status(of: connect)), "CONNECT: \(connect)")
        let asterisk = try Self.exchange(port: gateway.port, "OPTIONS * HTTP/1.1\r\n" + closing)
        #expect(Self.status(of: asterisk).hasPrefix("4"), "OPTIONS *: \(asterisk)")
        for host in [trap.authority, "127.0.0.1:\(gateway.port)"] {
            let absolute = try Self.exchange(
                port: gateway.port,
                "GET http://\(trap.authority)/echo/abs HTTP/1.1\r\n"
                    + "Host: \(host)\r\nConnection: close\r\n\r\n")
            #expect(Self.status(of: absolute) == "400", "absolute-form with Host \(host): \(absolute)")
        }
        #expect(echo.requests.isEmpty, "nothing was forwarded")
        #expect(trap.connections() == 0)
        gateway.stop()
        await redirecting.shutdown()
    }

    /// SSRF-07: `Host`, `X-Forwarded-Host` and `Forwarded` naming the trap do not steer the request, and a client's
    /// `X-Forwarded-For` and `X-Real-IP` are not taken as they are: the peer is appended, and `X-Real-IP` is the peer.
    @Test func hostAndForwardingHeadersNamingAnotherHostDoNotSteerTheRequest() async throws {
        let (trap, echo, redirecting, gateway) = try await Self.start()
        let answer = try Self.exchange(
            port: gateway.port,
            "GET /echo/steer HTTP/1.1\r\nHost: \(trap.authority)\r\n"
                + "X-Forwarded-Host: \(trap.authority)\r\n"
                + "Forwarded: host=\(trap.authority);for=6.6.6.6\r\n"
                + "X-Forwarded-For: 6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\n"
                + "Connection: close\r\n\r\n")
        #expect(Self.status(of: answer) == "200", "\(answer)")
        let received = try #require(echo.requests.first).head.headers
        #expect(received.first(name: "Host") == "127.0.0.1:\(echo.port)", "Host is the upstream's own")
        #expect(received["Forwarded"].isEmpty, "a client's Forwarded is dropped")
        #expect(received["X-Forwarded-Host"] == [trap.authority], "one X-Forwarded-Host: the Host the client sent")
        #expect(received["X-Forwarded-For"] == ["6.6.6.6, 127.0.0.1"], "the peer is appended")
        #expect(received["X-Real-IP"] == ["127.0.0.1"], "X-Real-IP is the peer, not the client's claim")
        #expect(trap.connections() == 0)
        gateway.stop()
        await redirecting.shutdown()
    }

    /// The trap, the echo upstream, the redirecting upstream (to `/r/elsewhere`, or to the trap) with its bearer
    /// token `sec04-token`, and the gateway in front of both.
    static func start(redirectingToTrap: Bool = false, upstreamTLS: Bool = false) async throws
        -> (TrapListener, RecordingUpstream, RedirectingUpstream, GatewayProcess)
    {
        let trap = try TrapListener()
        let echo = try await RecordingUpstream.start()
        var tls: TLSServerConfiguration?
        var caFile: String?
        if upstreamTLS {
            let certificates = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory("sec04-tls"))
            tls = TLSServerConfiguration(
                defaultCertificate: TLSCertificateFiles(
                    certificateChainPath: certificates.cert,
                    privateKeyPath: certificates.key))
            caFile = certificates.ca
        }
        let redirecting = try await RedirectingUpstream.start(
            location: redirectingToTrap ? "http://\(trap.authority)/steal" : "/r/elsewhere", tls: tls)
        let gateway = try await GatewayProcess(
            config: Self.config(
                echoPort: echo.port, redirectPort: redirecting.port,
                caFile: caFile),
            environment: ["UP_TOKEN": "sec04-token"])
        return (trap, echo, redirecting, gateway)
    }

    static func exchange(port: Int, _ request: String) throws -> String {
        let client = try RawClient(port: port)
        client.send(request)
        return String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self)
    }

    static func status(of answer: String) -> String {
        String(answer.split(separator: " ", maxSplits: 2).dropFirst().first ?? "")
    }
}
