import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// The real `moya-gateway` binary: upstream credentials (Basic on a challenge and pre-emptive), HTTPS upstreams with
/// verification against a CA file, the gateway's own TLS listener, and a route's whole-request deadline.
@Suite(.serialized) struct GatewayTLSAndCredentialsTests {

    @Test func credentialsAnswerTheUpstreamChallengeAndTheClientNeverSeesIt() async throws {
        let upstream = try await ChallengingUpstream.start(user: "svc", password: "PASSWORD_CANARY")
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  challenged:
                    base_url: http://127.0.0.1:\(upstream.port)
                    credentials: { user: svc, password: "${SVC_PASSWORD}" }
                  preemptive:
                    base_url: http://127.0.0.1:\(upstream.port)
                    credentials: { user: svc, password: "${SVC_PASSWORD}", preemptive: true }
                  misconfigured:
                    base_url: http://127.0.0.1:\(upstream.port)
                    credentials: { user: svc, password: WRONG_CANARY }
                  bearer:
                    base_url: http://127.0.0.1:\(upstream.port)
                    access_token: { type: bearer, token: TOKEN_CANARY }
                routes:
                  - { name: challenged, match: { path_prefix: /c }, upstream: challenged }
                  - { name: preemptive, match: { path_prefix: /p }, upstream: preemptive }
                  - { name: misconfigured, match: { path_prefix: /m }, upstream: misconfigured }
                  - { name: bearer, match: { path_prefix: /b }, upstream: bearer }
                """, environment: ["SVC_PASSWORD": "PASSWORD_CANARY"])
        let client = HTTPClient()

        let challenged = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/c/data", headers: ["Authorization": "Bearer CLIENT_CANARY"]))
        #expect(challenged.status == 200, "the 401 challenge is answered by the gateway, not passed on")
        #expect(challenged.headers.first(name: "WWW-Authenticate") == nil)
        let attempts = upstream.authorizations
        #expect(attempts.count == 2, "one unauthenticated attempt, one retry with the credentials: \(attempts)")
        #expect(attempts.first == .some(nil), "the client's own Authorization is never forwarded")
        #expect(attempts.last == .some(upstream.expectedAuthorization))

        upstream.reset()
        let preemptive = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/p/data"))
        #expect(preemptive.status == 200)
        #expect(
            upstream.authorizations == [upstream.expectedAuthorization], "Basic sent up front: no challenge round trip")

        // Credentials the upstream refuses even after the retry, and a refused token: the client cannot answer a
        // challenge to the gateway's credentials, so it gets a 502 and never the challenge.
        var refusals: [HTTPClientResponse] = []
        for path in ["/m/data", "/b/data"] {
            let refused = try await client.execute(HTTPClientRequest(url: "\(gateway.url)\(path)"))
            #expect(refused.status == 502, "\(path)")
            #expect(refused.headers.first(name: "WWW-Authenticate") == nil, "\(path)")
            #expect(String(decoding: refused.body, as: UTF8.self).hasPrefix("{\"error\":\"bad_gateway\""), "\(path)")
            refusals.append(refused)
        }

        gateway.stop()
        let logs = gateway.stdout + gateway.stderr
        let body = String(decoding: challenged.body + preemptive.body + refusals.flatMap(\.body), as: UTF8.self)
        let refusedLines = gateway.accessLog.filter {
            ($0["path"] as? String)?.hasSuffix("/data") == true && $0["status"] as? Int == 502
        }
        #expect(refusedLines.count == 2)
        #expect(refusedLines.allSatisfy { ($0["upstream_error"] as? String)?.contains("credentials") == true })
        for canary in [
            "PASSWORD_CANARY", "CLIENT_CANARY", "WRONG_CANARY", "TOKEN_CANARY", upstream.expectedAuthorization
        ] {
            #expect(!logs.contains(canary), "\(canary) leaked into logs")
            #expect(!body.contains(canary), "\(canary) leaked into a response")
        }
        await upstream.shutdown()
    }

    /// A Digest challenge (RFC 7616, MD5, `qop=auth`) is answered by the credentials plugin with the response its
    /// fields call for (checked here with coreutils' `md5sum`), and the client never sees the challenge.
    @Test func credentialsAnswerADigestChallenge() async throws {
        let upstream = try await ChallengingUpstream.start(user: "svc", password: "PASSWORD_CANARY", digest: true)
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  digest:
                    base_url: http://127.0.0.1:\(upstream.port)/v1
                    credentials: { user: svc, password: "${SVC_PASSWORD}" }
                routes:
                  - { name: digest, match: { path_prefix: /d }, upstream: digest, rewrite: { strip_prefix: /d } }
                """, environment: ["SVC_PASSWORD": "PASSWORD_CANARY"])
        let response = try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)/d/data?x=1"))
        #expect(response.status == 200 && String(decoding: response.body, as: UTF8.self) == "welcome")
        #expect(response.headers.first(name: "WWW-Authenticate") == nil)
        let attempts = upstream.authorizations
        #expect(attempts.count == 2 && attempts.first == .some(nil), "\(attempts)")
        let answer = try #require(attempts.last ?? nil)
        let fields = Self.digestFields(answer)
        let challenge = try #require(upstream.digest)
        #expect(fields["username"] == "svc" && fields["realm"] == challenge.realm && fields["nonce"] == challenge.nonce)
        #expect(fields["uri"] == "/v1/data?x=1" && fields["qop"] == "auth" && fields["opaque"] == challenge.opaque)
        let nc = try #require(fields["nc"])
        let cnonce = try #require(fields["cnonce"])
        let ha1 = try Self.md5("svc:\(challenge.realm):PASSWORD_CANARY")
        let ha2 = try Self.md5("GET:/v1/data?x=1")
        #expect(fields["response"] == (try Self.md5("\(ha1):\(challenge.nonce):\(nc):\(cnonce):auth:\(ha2)")))
        gateway.stop()
        let logs = gateway.stdout + gateway.stderr
        #expect(!logs.contains("PASSWORD_CANARY") && !logs.contains(fields["response"] ?? "-"))
        await upstream.shutdown()
    }

    /// The fields of a `Digest` authorization, quotes removed.
    static func digestFields(_ authorization: String) -> [String: String] {
        var fields: [String: String] = [:]
        for part in authorization.dropFirst("Digest ".count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            fields[pair[0]] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return fields
    }

    /// MD5 in hex, by coreutils (an oracle independent of the plugin's own MD5).
    static func md5(_ text: String) throws -> String {
        let result = try ProcessRunner.run("/bin/sh", ["-c", "printf '%s' \"$0\" | md5sum", text])
        return String(result.stdout.prefix(32))
    }

    @Test func httpsUpstreamsAreVerifiedAgainstTheConfiguredCAFile() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-tls-upstream")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let upstream = try await TLSEchoUpstream.start(certificate: files.cert, key: files.key)
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  trusted:
                    base_url: https://localhost:\(upstream.port)
                    tls: { ca_file: \(files.ca) }
                  untrusted:
                    base_url: https://localhost:\(upstream.port)
                  unverified:
                    base_url: https://localhost:\(upstream.port)
                    tls: { verify: false }
                routes:
                  - { name: trusted, match: { path_prefix: /trusted }, upstream: trusted, rewrite: { strip_prefix: /trusted } }
                  - { name: untrusted, match: { path_prefix: /untrusted }, upstream: untrusted }
                  - { name: unverified, match: { path_prefix: /unverified }, upstream: unverified, rewrite: { strip_prefix: /unverified } }
                """)
        let client = HTTPClient()
        let trusted = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/trusted/hello"))
        #expect(trusted.status == 200)
        #expect(String(decoding: trusted.body, as: UTF8.self) == "tls /hello")
        let untrusted = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/untrusted/hello"))
        #expect(untrusted.status == 502, "verification is on by default: an unknown CA is refused")
        #expect(upstream.hits == 1, "the unverified upstream never received the request")
        let unverified = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/unverified/hello"))
        #expect(
            unverified.status == 200 && String(decoding: unverified.body, as: UTF8.self) == "tls /hello",
            "`tls.verify: false` takes a certificate no CA vouches for")
        gateway.stop()
        #expect(gateway.accessLog.first { $0["route"] as? String == "untrusted" }?["upstream_error"] != nil)
        await upstream.shutdown()
    }

    /// TLS-07: a certificate from a trusted CA for another name is refused too. The upstream is reached by its address
    /// through `servers`, so only the name checked differs: the base URL's host, also sent as the server name.
    @Test func anUpstreamCertificateForAnotherNameIsRefused() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-tls-wrong-host")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let upstream = try await TLSEchoUpstream.start(certificate: files.cert, key: files.key)
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  right:
                    base_url: https://localhost:\(upstream.port)
                    servers: ["127.0.0.1:\(upstream.port)"]
                    tls: { ca_file: \(files.ca) }
                  wrong:
                    base_url: https://users.internal:\(upstream.port)
                    servers: ["127.0.0.1:\(upstream.port)"]
                    tls: { ca_file: \(files.ca) }
                routes:
                  - { name: right, match: { path_prefix: /right }, upstream: right, rewrite: { strip_prefix: /right } }
                  - { name: wrong, match: { path_prefix: /wrong }, upstream: wrong, rewrite: { strip_prefix: /wrong } }
                """)
        let client = HTTPClient()
        let right = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/right/hello"))
        #expect(right.status == 200)
        let wrong = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/wrong/hello"))
        #expect(wrong.status == 502, "a certificate for localhost does not stand for users.internal")
        #expect(upstream.hits == 1, "the request to the wrong name was never sent")
        gateway.stop()
        let error = gateway.accessLog.last?["upstream_error"] as? String
        #expect(error?.contains("certificate") == true || error?.contains("verif") == true, "\(error ?? "none")")
        await upstream.shutdown()
    }

    /// Certificate files replaced in place (a renewal) are loaded by the next reload (GatewayTLSReloadTests checks
    /// what new and open connections get); a reload with the same files leaves the served pair alone, and neither
    /// asks for a restart.
    @Test func aReloadAfterTheCertificateFilesChangedLoadsThem() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-tls-renewal")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let tlsPort = try freeLoopbackPort()
        let config = """
            server:
              listen: ["127.0.0.1:PORT"]
              threads: 1
              tls: { listen: ["127.0.0.1:\(tlsPort)"], certificate: \(files.cert), private_key: \(files.key) }
            admin:
              listen: "127.0.0.1:ADMIN"
            upstreams:
              stubbed: { stub: { status: 200, body: "ok" } }
            routes:
              - { name: stubbed, match: { path: /hello }, upstream: stubbed }
            """
        let gateway = try await GatewayProcess(config: config)
        func awaitReloads(_ count: Int) async throws {
            for _ in 0..<100 where gateway.stdout.components(separatedBy: "\"reloaded\"").count <= count {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        gateway.signal(SIGHUP)
        try await awaitReloads(1)
        _ = try ProcessRunner.makeCertificates(in: directory)
        gateway.signal(SIGHUP)
        try await awaitReloads(2)
        gateway.stop()
        let lines = gateway.stdout.split(separator: "\n")
        #expect(!lines.contains { $0.contains("only after a restart") }, "\(gateway.stdout)")
        #expect(
            lines.filter { $0.contains("reloaded the TLS certificate") }.count == 1,
            "only the reload after the renewal loads the files again: \(gateway.stdout)")
    }

    @Test func theGatewayServesHTTPSWithALPN() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-tls-listener")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let tlsPort = try freeLoopbackPort()
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  tls:
                    listen: ["127.0.0.1:\(tlsPort)"]
                    certificate: \(files.cert)
                    private_key: \(files.key)
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  stubbed:
                    stub: { status: 200, headers: { Content-Type: application/json }, body: '{"ok":true}' }
                  echo: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: stubbed, match: { path: /hello }, upstream: stubbed }
                  - { name: echo, match: { path: /echo }, upstream: echo }
                """)
        var configuration = HTTPClient.Configuration()
        configuration.tls = TLSClientConfiguration(caFile: files.ca)
        let client = HTTPClient(configuration: configuration)
        let response = try await client.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello"))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "{\"ok\":true}")

        let curl = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2", "--cacert", files.ca, "-o", "/dev/null",
                "-w", "%{http_version} %{http_code} %{scheme}",
                "https://localhost:\(tlsPort)/hello"
            ])
        #expect(curl.stdout == "2 200 HTTPS", "ALPN picks h2 on the TLS listener: \(curl.stdout) \(curl.stderr)")
        let http1 = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http1.1", "--cacert", files.ca, "-o", "/dev/null",
                "-w", "%{http_version} %{http_code}", "https://localhost:\(tlsPort)/hello"
            ])
        #expect(http1.stdout == "1.1 200")

        // Proxied over TLS and HTTP/2: the upstream learns the scheme, and `Via` names the client's protocol.
        let proxied = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2", "--cacert", files.ca, "-o", "/dev/null",
                "-w", "%{http_version} %{http_code}", "https://localhost:\(tlsPort)/echo"
            ])
        #expect(proxied.stdout == "2 200")
        let received = try #require(upstream.requests.last)
        #expect(received.head.headers.first(name: "X-Forwarded-Proto") == "https")
        #expect(received.head.headers.first(name: "X-Forwarded-Host") == "localhost:\(tlsPort)")
        #expect(received.head.headers.first(name: "Via") == "2 moya-gateway")
        gateway.stop()
        #expect(gateway.accessLog.count == 4, "one access-log line per request over TLS")
    }

    @Test func aRouteTimeoutIsTheWholeRequestsDeadline() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  patient:
                    base_url: http://127.0.0.1:\(upstream.port)
                    timeout: { connect: 1s, response: 10s }
                routes:
                  - { name: bounded, match: { path_prefix: /bounded }, upstream: patient, timeout: 300ms,
                      rewrite: { strip_prefix: /bounded } }
                  - { name: unbounded, match: { path_prefix: /unbounded }, upstream: patient, rewrite: { strip_prefix: /unbounded } }
                  - { name: retried, match: { path_prefix: /retried }, upstream: patient, timeout: 700ms,
                      retries: { attempts: 10, statuses: [503] }, rewrite: { strip_prefix: /retried } }
                  - { name: backoff, match: { path_prefix: /backoff }, upstream: patient, timeout: 700ms,
                      retries: { attempts: 10, statuses: [503], backoff: 200ms }, rewrite: { strip_prefix: /backoff } }
                """)
        let client = HTTPClient()
        let started = ContinuousClock.now
        let bounded = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/bounded/slow?ms=3000"))
        let elapsed = ContinuousClock.now - started
        #expect(bounded.status == 504)
        #expect(
            elapsed >= .milliseconds(250) && elapsed < .milliseconds(2500),
            "the route's 300ms deadline, not the upstream's 10s: \(elapsed)")
        let unbounded = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/unbounded/slow?ms=400"))
        #expect(unbounded.status == 200, "without a route timeout the upstream's response timeout applies")

        // Retries share the deadline: slow 503s are retried until the deadline cuts the third attempt (504) ...
        upstream.reset()
        let retriedStart = ContinuousClock.now
        let retried = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/retried/status/503?ms=300"))
        let retriedElapsed = ContinuousClock.now - retriedStart
        #expect(retried.status == 504, "the deadline ends the attempt in progress")
        #expect(retriedElapsed >= .milliseconds(600) && retriedElapsed < .milliseconds(2000), "\(retriedElapsed)")
        #expect(upstream.requests.count == 3, "attempts at 0, 300 and 600 ms: \(upstream.requests.count)")
        // ... and no attempt starts that its backoff would push past the deadline: the last answer stands.
        upstream.reset()
        let backoffStart = ContinuousClock.now
        let backedOff = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/backoff/status/503"))
        let backoffElapsed = ContinuousClock.now - backoffStart
        #expect(backedOff.status == 503)
        #expect(backoffElapsed < .milliseconds(1200), "\(backoffElapsed)")
        #expect(
            (3...4).contains(upstream.requests.count),
            "attempts at 0, 200, 400 (and 600) ms: \(upstream.requests.count)")
        gateway.stop()
    }
}

/// An upstream that answers `401` with `WWW-Authenticate: Basic` unless the request carries the expected Basic
/// credentials, and records the `Authorization` header of every request.
final class ChallengingUpstream: HTTPServerHandler {
    let expectedAuthorization: String
    /// Digest's challenge fields (RFC 7616), when the upstream challenges with Digest instead of Basic.
    let digest: (realm: String, nonce: String, opaque: String)?
    private let serving = LoopbackServer()
    private let seen = Locked<[String?]>([])

    var port: Int { serving.port }
    var authorizations: [String?] { seen.withLock { $0 } }
    func reset() { seen.withLock { $0.removeAll() } }
    func shutdown() async { await serving.shutdown() }

    private init(user: String, password: String, digest: Bool) {
        expectedAuthorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        self.digest =
            digest ? ("upstream", "dcd98b7102dd2f0e8b11d0f600bfb0c093", "5ccc069c403ebaf9f0171e9517f40e41") : nil
    }

    /// Challenges with Basic, or with Digest (`qop=auth`, MD5) when `digest`; a Digest answer is let in unchecked
    /// (tests check it against an MD5 of their own) and recorded.
    static func start(user: String, password: String, digest: Bool = false) async throws -> ChallengingUpstream {
        let upstream = ChallengingUpstream(user: user, password: password, digest: digest)
        try await upstream.serving.start(upstream)
        return upstream
    }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let authorization = request.head.headers.first(name: "Authorization")
        seen.withLock { $0.append(authorization) }
        if let digest {
            guard authorization?.hasPrefix("Digest ") == true else {
                let challenge =
                    "Digest realm=\"\(digest.realm)\", qop=\"auth\", nonce=\"\(digest.nonce)\", opaque=\"\(digest.opaque)\""
                return HTTPServerResponse(
                    status: 401, headers: ["WWW-Authenticate": challenge], body: Array("challenge".utf8))
            }
        } else if authorization != expectedAuthorization {
            return HTTPServerResponse(
                status: 401, headers: ["WWW-Authenticate": "Basic realm=\"upstream\""],
                body: Array("challenge".utf8))
        }
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("welcome".utf8))
    }
}

/// An HTTPS upstream (our server with a test certificate) answering `tls <target>`.
final class TLSEchoUpstream: HTTPServerHandler {
    private let serving = LoopbackServer()
    private let count = Locked(0)
    var port: Int { serving.port }
    var hits: Int { count.withLock { $0 } }

    static func start(certificate: String, key: String) async throws -> TLSEchoUpstream {
        let upstream = TLSEchoUpstream()
        let tls = TLSServerConfiguration(
            defaultCertificate: TLSCertificateFiles(certificateChainPath: certificate, privateKeyPath: key))
        try await upstream.serving.start(upstream, tls: tls)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        count.withLock { $0 += 1 }
        return HTTPServerResponse(
            status: 200, headers: ["Content-Type": "text/plain"], body: Array("tls \(request.head.target)".utf8))
    }
}
