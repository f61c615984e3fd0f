import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

@Suite(.serialized) struct TLSServerTests {
    @Test func curlOverTLSWithGeneratedCertificateAndOldProtocolsRefused() async throws {
        let (server, port, ca) = try await startTLSTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let ok = try ProcessRunner.run(
            "curl",
            [
                "-s", "--cacert", ca, "https://localhost:\(port)/hello",
                "--resolve", "localhost:\(port):127.0.0.1"
            ])
        #expect(ok.stdout == "hello")
        let alpn = try ProcessRunner.run(
            "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "http/1.1", "-CAfile", ca],
            input: Data("Q\n".utf8))
        #expect(alpn.stdout.contains("ALPN protocol: http/1.1"))
        for old in ["-tls1", "-tls1_1"] {
            let refused = try ProcessRunner.run(
                "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", old, "-cipher", "DEFAULT:@SECLEVEL=0"],
                input: Data("Q\n".utf8))
            #expect(refused.stdout.contains("Cipher is (NONE)"), "\(old) must be refused")
            #expect(!refused.stdout.contains("BEGIN CERTIFICATE"))
        }
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let (_, closed) = client.readAll(timeout: 3)
        #expect(closed, "plaintext on the TLS port is closed")
    }

    /// TLS-06: a client's renegotiation is refused; TLS-02: an SSLv2-format or SSLv3 ClientHello gets a close or an
    /// alert, never a handshake. The server goes on serving.
    @Test func renegotiationAndAncientHellosAreRefused() async throws {
        let (server, port, ca) = try await startTLSTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        // `R` on its own line asks s_client to renegotiate; the request after it is never answered.
        let renegotiation = try ProcessRunner.run(
            "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-CAfile", ca],
            input: Data("R\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let said = renegotiation.stdout + renegotiation.stderr
        #expect(said.contains("RENEGOTIATING"), "\(said.suffix(300))")
        #expect(said.contains("no renegotiation"), "\(said.suffix(300))")
        #expect(!renegotiation.stdout.contains("HTTP/1.1 200"))

        var random = [UInt8](repeating: 0x2a, count: 32)
        random[0] = 1
        let sslv3Body: [UInt8] = [0x03, 0x00] + random + [0x00, 0x00, 0x02, 0x00, 0x2f, 0x01, 0x00]
        let sslv3Handshake: [UInt8] = [0x01, 0x00, 0x00, UInt8(sslv3Body.count)] + sslv3Body
        let sslv3: [UInt8] = [0x16, 0x03, 0x00, 0x00, UInt8(sslv3Handshake.count)] + sslv3Handshake
        let challenge = [UInt8](repeating: 0x11, count: 16)
        let sslv2Body: [UInt8] = [0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x00, 0x00, 0x10, 0x01, 0x00, 0x80] + challenge
        let sslv2: [UInt8] = [0x80, UInt8(sslv2Body.count)] + sslv2Body
        for (name, hello) in [("SSLv3", sslv3), ("SSLv2", sslv2)] {
            let client = try RawClient(port: port)
            client.send(hello)
            let (bytes, closed) = client.readAll(timeout: 3)
            #expect(closed, "\(name): closed")
            #expect(bytes.isEmpty || bytes.first == 0x15, "\(name): nothing but an alert, got \(bytes.prefix(8))")
        }
        let ok = try ProcessRunner.run(
            "curl",
            [
                "-s", "--cacert", ca, "https://localhost:\(port)/hello",
                "--resolve", "localhost:\(port):127.0.0.1"
            ])
        #expect(ok.stdout == "hello")
    }

    /// The TLS 1.3 cipher suite a client gets: AES-128-GCM whatever the client's order among the AES suites (OpenSSL's
    /// clients list AES-256-GCM first), ChaCha20-Poly1305 for a client that lists it first (one without AES hardware),
    /// and AES-256-GCM for a client that offers nothing else.
    @Test func tls13SuitePreferenceIsAES128ThenClientsChaChaThenAES256() async throws {
        let (server, port, ca) = try await startTLSTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let cases: [(offered: String?, expected: String)] = [
            (nil, "TLS_AES_128_GCM_SHA256"),
            ("TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
            (
                "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256",
                "TLS_CHACHA20_POLY1305_SHA256"
            ),
            ("TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256"),
            ("TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384")
        ]
        for (offered, expected) in cases {
            var arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-CAfile", ca]
            if let offered { arguments += ["-ciphersuites", offered] }
            let output = try ProcessRunner.run("openssl", arguments, input: Data("Q\n".utf8))
            let line = output.stdout.split(separator: "\n").first { $0.contains("Cipher is") }
            #expect(
                line == "New, TLSv1.3, Cipher is \(expected)", "offered \(offered ?? "the default"): \(line ?? "none")")
        }
    }
}
