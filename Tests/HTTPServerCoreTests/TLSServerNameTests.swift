import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

/// SNI: several certificates on one TLS listener, chosen by the client's server name.
@Suite(.serialized) struct TLSServerNameTests {
    /// Certificates (each from its own throwaway CA) for `default.test`, `a.test`, `*.wild.test` and `other.test`
    /// (the last configured for the name `listed.test` only).
    struct Certificates {
        let byName: [String: (ca: String, cert: String, key: String)]

        init() throws {
            var made: [String: (ca: String, cert: String, key: String)] = [:]
            for name in ["default.test", "a.test", "*.wild.test", "other.test"] {
                made[name] = try ProcessRunner.makeCertificates(
                    in: ProcessRunner.temporaryDirectory("sni"), commonName: name)
            }
            byName = made
        }

        func files(_ name: String, serverNames: [String]? = nil) -> TLSCertificateFiles {
            TLSCertificateFiles(
                certificateChainPath: byName[name]!.cert, privateKeyPath: byName[name]!.key, serverNames: serverNames)
        }

        func configuration(strict: Bool = false) -> TLSServerConfiguration {
            TLSServerConfiguration(
                defaultCertificate: files("default.test"),
                certificates: [
                    files("a.test"), files("*.wild.test"), files("other.test", serverNames: ["listed.test"])
                ],
                rejectUnknownServerNames: strict)
        }
    }

    @Test func ourClientGetsTheCertificateForItsServerName() async throws {
        let certificates = try await offPool { try Certificates() }
        let (server, port) = try await startTestServer(tls: certificates.configuration())
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let insecure = TLSClientConfiguration(verifyPeer: false)
        let expected: [(sni: String?, commonName: String)] = [
            ("a.test", "a.test"), ("A.Test", "a.test"), ("x.wild.test", "*.wild.test"), ("listed.test", "other.test"),
            ("other.test", "default.test"), ("y.x.wild.test", "default.test"), ("wild.test", "default.test"),
            ("unknown.test", "default.test"), (nil, "default.test")
        ]
        for (sni, commonName) in expected {
            let exchange = try await tlsExchange(port: port, serverName: sni, client: insecure, loop: loop)
            #expect(exchange.served, "SNI \(sni ?? "none"): \(exchange.error ?? exchange.response)")
            #expect(exchange.peer?.subject == "/CN=\(commonName)", "SNI \(sni ?? "none")")
            #expect(exchange.peer?.dnsNames.first == commonName, "SNI \(sni ?? "none")")
        }
        // With verification on (the certificate's own CA), the chosen certificate passes the host-name check.
        let verified = try await tlsExchange(
            port: port, serverName: "x.wild.test",
            client: TLSClientConfiguration(caFile: certificates.byName["*.wild.test"]!.ca), loop: loop)
        #expect(verified.served, "\(verified.error ?? verified.response)")
        let wrongCA = try await tlsExchange(
            port: port, serverName: "a.test",
            client: TLSClientConfiguration(caFile: certificates.byName["default.test"]!.ca), loop: loop)
        #expect(!wrongCA.served)
        #expect(wrongCA.error?.contains("certificate verification failed") == true, "\(wrongCA.error ?? "no error")")
    }

    @Test func opensslClientGetsTheCertificateForItsServerName() async throws {
        let certificates = try await offPool { try Certificates() }
        let (server, port) = try await startTestServer(tls: certificates.configuration())
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        for (sni, commonName) in [
            ("a.test", "a.test"), ("b.wild.test", "*.wild.test"), ("listed.test", "other.test"),
            ("nobody.test", "default.test")
        ] {
            let output = try await offPool {
                try ProcessRunner.run(
                    "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", sni],
                    input: Data("Q\n".utf8))
            }
            let subject = output.stdout.split(separator: "\n").first { $0.hasPrefix("subject=") }
            #expect(subject == "subject=CN = \(commonName)", "SNI \(sni): \(subject ?? "no certificate")")
        }
    }

    @Test func strictServerRefusesUnknownNamesButServesKnownOnesAndNoSNI() async throws {
        let certificates = try await offPool { try Certificates() }
        let (server, port) = try await startTestServer(tls: certificates.configuration(strict: true))
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let insecure = TLSClientConfiguration(verifyPeer: false)
        let unknown = try await tlsExchange(port: port, serverName: "unknown.test", client: insecure, loop: loop)
        #expect(!unknown.served)
        #expect(unknown.peer == nil, "no certificate is shown for an unknown name")
        #expect(unknown.error?.contains("unrecognized name") == true, "\(unknown.error ?? "no error")")
        let known = try await tlsExchange(port: port, serverName: "a.test", client: insecure, loop: loop)
        #expect(known.served && known.peer?.subject == "/CN=a.test")
        let noName = try await tlsExchange(port: port, serverName: nil, client: insecure, loop: loop)
        #expect(noName.served && noName.peer?.subject == "/CN=default.test")
        let output = try await offPool {
            try ProcessRunner.run(
                "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "unknown.test"],
                input: Data("Q\n".utf8))
        }
        #expect(output.stderr.contains("unrecognized name"), "\(output.stderr)")
        #expect(!output.stdout.contains("BEGIN CERTIFICATE"))
    }
}
