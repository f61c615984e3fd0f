import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

/// Mutual TLS: the server asks for (or requires) a client certificate and verifies it against a CA file; our client
/// presents one from ``TLSClientConfiguration/clientCertificate``.
@Suite(.serialized) struct TLSClientCertificateTests {
    struct Material {
        let server: (ca: String, cert: String, key: String)
        /// A client certificate issued by the CA the server trusts.
        let trusted: (ca: String, cert: String, key: String)
        /// A client certificate from another CA.
        let stranger: (ca: String, cert: String, key: String)

        init() throws {
            server = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory("mtls"))
            trusted = try ProcessRunner.makeCertificates(
                in: ProcessRunner.temporaryDirectory("mtls"), commonName: "client.test")
            stranger = try ProcessRunner.makeCertificates(
                in: ProcessRunner.temporaryDirectory("mtls"), commonName: "stranger.test")
        }

        func serverConfiguration(_ authentication: TLSClientAuthentication) -> TLSServerConfiguration {
            TLSServerConfiguration(
                defaultCertificate: TLSCertificateFiles(certificateChainPath: server.cert, privateKeyPath: server.key),
                clientAuthentication: authentication)
        }

        func client(presenting certificate: (ca: String, cert: String, key: String)?) -> TLSClientConfiguration {
            TLSClientConfiguration(
                caFile: server.ca,
                clientCertificate: certificate.map {
                    TLSCertificateFiles(certificateChainPath: $0.cert, privateKeyPath: $0.key)
                })
        }
    }

    @Test func requiredClientCertificateIsVerifiedAgainstTheConfiguredCA() async throws {
        let material = try await offPool { try Material() }
        let (server, port) = try await startTestServer(
            tls: material.serverConfiguration(.required(caFile: material.trusted.ca)))
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }

        let presented = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: material.trusted), loop: loop)
        #expect(presented.served, "\(presented.error ?? presented.response)")

        let missing = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: nil), loop: loop)
        #expect(!missing.served)
        #expect(missing.error != nil, "the handshake fails without a client certificate")

        let wrongCA = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: material.stranger), loop: loop)
        #expect(!wrongCA.served)
        #expect(wrongCA.error != nil, "a certificate from another CA is refused")

        // curl as a second opinion.
        let curl = try await offPool {
            try ProcessRunner.run(
                "curl",
                [
                    "-s", "--cacert", material.server.ca, "--cert", material.trusted.cert, "--key",
                    material.trusted.key,
                    "https://localhost:\(port)/hello", "--resolve", "localhost:\(port):127.0.0.1"
                ])
        }
        #expect(curl.stdout == "hello")
        let curlWithout = try await offPool {
            try ProcessRunner.run(
                "curl",
                [
                    "-s", "--cacert", material.server.ca, "https://localhost:\(port)/hello",
                    "--resolve", "localhost:\(port):127.0.0.1"
                ])
        }
        #expect(curlWithout.status != 0 && curlWithout.stdout.isEmpty)
    }

    @Test func optionalClientCertificateServesClientsWithoutOneAndRefusesUnverifiedOnes() async throws {
        let material = try await offPool { try Material() }
        let (server, port) = try await startTestServer(
            tls: material.serverConfiguration(.optional(caFile: material.trusted.ca)))
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let without = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: nil), loop: loop)
        #expect(without.served, "\(without.error ?? without.response)")
        let trusted = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: material.trusted), loop: loop)
        #expect(trusted.served, "\(trusted.error ?? trusted.response)")
        let stranger = try await tlsExchange(
            port: port, serverName: "localhost", client: material.client(presenting: material.stranger), loop: loop)
        #expect(!stranger.served)
    }

    @Test func unreadableClientCAFileFailsServerStart() async throws {
        let material = try await offPool { try Material() }
        await #expect(throws: TLSError.self) {
            _ = try await startTestServer(tls: material.serverConfiguration(.required(caFile: "/nonexistent/ca.pem")))
        }
    }
}
