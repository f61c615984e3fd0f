import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// TLS files reloaded without a restart, through the real `moya-gateway` binary: a certificate and key replaced in
/// place are served to new handshakes after SIGHUP or, with `--watch`, by themselves (checked with `openssl s_client`),
/// an HTTP/2 connection opened before keeps working on the old certificate, a key that does not match its
/// certificate is rejected with OpenSSL's reason while the old pair keeps serving; an upstream's CA bundle likewise.
@Suite(.serialized) struct GatewayTLSReloadTests {
    /// A certificate set (CA, certificate for localhost and 127.0.0.1, key) in a directory of its own.
    struct Certificates {
        let ca: String
        let cert: String
        let key: String

        init(_ name: String) throws {
            let directory = ProcessRunner.temporaryDirectory("gateway-tls-\(name)")
            (ca, cert, key) = try ProcessRunner.makeCertificates(in: directory)
        }

        /// The SHA-256 fingerprint `openssl x509` gives the certificate.
        var fingerprint: String { GatewayTLSReloadTests.fingerprint(ofFile: cert) }
    }

    static func fingerprint(ofFile path: String) -> String {
        (try? ProcessRunner.run("openssl", ["x509", "-in", path, "-noout", "-fingerprint", "-sha256"]))?.stdout
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "none"
    }

    /// The fingerprint of the certificate a new handshake with `port` gets (`openssl s_client`).
    static func servedFingerprint(port: Int) throws -> String {
        let output = try ProcessRunner.run(
            "/bin/sh",
            [
                "-c",
                "openssl s_client -connect 127.0.0.1:\(port) -servername localhost </dev/null 2>/dev/null"
                    + " | openssl x509 -noout -fingerprint -sha256"
            ])
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Replaces `target` with `source`'s bytes in one rename, as a renewal (cert-manager, certbot) does.
    static func replace(_ target: String, with source: String) throws {
        let temporary = target + ".new"
        try? FileManager.default.removeItem(atPath: temporary)
        try FileManager.default.copyItem(atPath: source, toPath: temporary)
        guard rename(temporary, target) == 0 else { throw GatewayTestError("rename failed: \(errno)") }
    }

    static func config(tlsPort: Int, reload: String = "") -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          tls: { listen: ["127.0.0.1:\(tlsPort)"], certificate: tls/server.pem, private_key: tls/server.key }
        admin:
          listen: "127.0.0.1:ADMIN"
        \(reload)
        upstreams:
          stubbed: { stub: { status: 200, body: "ok" } }
        routes:
          - { name: stubbed, match: { path: /hello }, upstream: stubbed }
        """
    }

    static func reloads(_ gateway: GatewayProcess) -> Int { gateway.stdout.occurrences(of: "\"msg\":\"reloaded\"") }
    static func rejections(_ gateway: GatewayProcess) -> Int { gateway.stdout.occurrences(of: "reload rejected") }

    /// Waits (up to 5 s) until `condition` holds.
    static func waitFor(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// A client that trusts only `ca`, speaking HTTP/2 (one connection, kept) or HTTP/1.1.
    static func client(trusting ca: String, http2: Bool) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.tls = TLSClientConfiguration(caFile: ca)
        configuration.http2 = http2 ? .always : .never
        return HTTPClient(configuration: configuration)
    }

    /// The renewal, then a mismatched pair, each applied by `apply` (SIGHUP, or nothing with `--watch`).
    func renewalIsServedAndAMismatchIsRefused(watch: Bool) async throws {
        let first = try Certificates("first")
        let second = try Certificates("second")
        let tlsPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(
            config: Self.config(tlsPort: tlsPort, reload: watch ? "reload: { debounce: 500ms }" : ""),
            arguments: watch ? ["--watch"] : [],
            setUp: { directory, _ in
                try FileManager.default.createDirectory(atPath: "\(directory)/tls", withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: first.cert, toPath: "\(directory)/tls/server.pem")
                try FileManager.default.copyItem(atPath: first.key, toPath: "\(directory)/tls/server.key")
            })
        let served = "\(gateway.directory)/tls/server.pem"
        let servedKey = "\(gateway.directory)/tls/server.key"
        #expect(try Self.servedFingerprint(port: tlsPort) == first.fingerprint)

        // An HTTP/2 connection that trusts only the first CA: opened now, it must stay usable after the renewal
        // (a new handshake would be refused: the new certificate is not signed by that CA).
        let held = Self.client(trusting: first.ca, http2: true)
        #expect(try await held.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello")).status == 200)

        let reloadsBefore = Self.reloads(gateway)
        try Self.replace(servedKey, with: second.key)
        try Self.replace(served, with: second.cert)
        if !watch { gateway.signal(SIGHUP) }
        #expect(try await Self.waitFor { Self.reloads(gateway) == reloadsBefore + 1 }, "\(gateway.stdout)")
        #expect(gateway.stdout.contains("reloaded the TLS certificate: new handshakes use it"))
        #expect(
            try Self.servedFingerprint(port: tlsPort) == second.fingerprint, "new handshakes get the new certificate")
        #expect(
            try await held.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello")).status == 200,
            "the HTTP/2 connection opened before the renewal keeps working")
        let fresh = Self.client(trusting: second.ca, http2: false)
        #expect(try await fresh.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello")).status == 200)

        // A key that does not belong to the certificate: the reload is refused with the reason, the pair that was
        // served still is.
        try Self.replace(servedKey, with: first.key)
        if !watch { gateway.signal(SIGHUP) }
        #expect(try await Self.waitFor { Self.rejections(gateway) == 1 }, "\(gateway.stdout)")
        let rejection = gateway.stdout.split(separator: "\n").first { $0.contains("reload rejected") } ?? ""
        #expect(
            rejection.contains("gateway.yaml:4: server.tls.certificate: private key") && rejection.contains("mismatch"),
            "\(rejection)")
        #expect(try Self.servedFingerprint(port: tlsPort) == second.fingerprint)
        #expect(try await fresh.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello")).status == 200)
        #expect(try await held.execute(HTTPClientRequest(url: "https://localhost:\(tlsPort)/hello")).status == 200)
        #expect(Self.reloads(gateway) == reloadsBefore + 1)
        #expect(!gateway.stdout.contains("only after a restart"))
        #expect(gateway.stop() == 0)
    }

    @Test func aCertificateRenewedInPlaceIsServedAfterSIGHUP() async throws {
        try await renewalIsServedAndAMismatchIsRefused(watch: false)
    }

    @Test func aCertificateRenewedInPlaceIsServedByTheFileWatch() async throws {
        try await renewalIsServedAndAMismatchIsRefused(watch: true)
    }

    /// An HTTPS upstream that changes CA: the CA bundle replaced in place is used by the reload's new clients; a
    /// bundle that does not load is refused with its `ca_file` line, and the running one stays.
    @Test func anUpstreamCABundleIsReloaded() async throws {
        let first = try Certificates("upstream-first")
        let second = try Certificates("upstream-second")
        let port = try freeLoopbackPort()
        func upstream(_ certificates: Certificates) async throws -> HTTPServer {
            let server = HTTPServer(
                configuration: .init(
                    listen: [], tlsListen: [SocketAddress(numericHost: "127.0.0.1", port: port)!],
                    tls: TLSServerConfiguration(
                        defaultCertificate: TLSCertificateFiles(
                            certificateChainPath: certificates.cert, privateKeyPath: certificates.key))),
                group: try EventLoopGroup(threads: 1), handler: RequestRecorder())
            try await server.start()
            return server
        }
        var server = try await upstream(first)
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  secure:
                    base_url: https://localhost:\(port)
                    tls: { ca_file: ca/bundle.pem }
                routes:
                  - { name: secure, match: { path_prefix: /s }, upstream: secure }
                """, files: ["ca/bundle.pem": try String(contentsOfFile: first.ca, encoding: .utf8)])
        let client = HTTPClient()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/s/one")).status == 200)

        // The upstream now presents a certificate of another CA: refused until the bundle has that CA.
        await server.shutdown(timeout: .seconds(1))
        server = try await upstream(second)
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/s/two")).status == 502)
        try Self.replace("\(gateway.directory)/ca/bundle.pem", with: second.ca)
        gateway.signal(SIGHUP)
        #expect(try await Self.waitFor { Self.reloads(gateway) == 1 })
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/s/three")).status == 200)

        // A bundle with no certificate in it: refused, with the key path and line; the running clients stay.
        try "not a certificate\n".write(toFile: "\(gateway.directory)/ca/bundle.pem", atomically: true, encoding: .utf8)
        gateway.signal(SIGHUP)
        #expect(try await Self.waitFor { Self.rejections(gateway) == 1 })
        let rejection = gateway.stdout.split(separator: "\n").first { $0.contains("reload rejected") } ?? ""
        #expect(rejection.contains("gateway.yaml:9: upstreams.secure.tls.ca_file: CA file"), "\(rejection)")
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/s/four")).status == 200)
        #expect(gateway.stop() == 0)
        await server.shutdown(timeout: .seconds(1))
    }
}
