import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

/// A TLS client that connects and then sends nothing, or only part of a ClientHello, is closed after the configured
/// handshake timeout; meanwhile other clients are served.
@Suite(.serialized) struct TLSHandshakeTimeoutTests {
    /// The first bytes of a ClientHello: a handshake record header announcing 512 bytes, then 6 of them.
    static let partialClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]

    func tls(timeout: Duration) throws -> (TLSServerConfiguration, ca: String) {
        let (ca, cert, key) = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory("handshake"))
        return (
            TLSServerConfiguration(
                defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key),
                handshakeTimeout: timeout), ca
        )
    }

    @Test(arguments: [true, false])
    func silentAndPartialHandshakesAreClosedAtTheTimeout(http2: Bool) async throws {
        let (configuration, ca) = try await offPool { [self] in try tls(timeout: .seconds(1)) }
        let (server, port) = try await startTestServer(tls: configuration, http2: http2)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let outcome = try await offPool { () -> (silent: Bool, partial: Bool, served: String, idleHeld: Int) in
            let silent = try RawClient(port: port)
            let partial = try RawClient(port: port)
            partial.send(TLSHandshakeTimeoutTests.partialClientHello)
            // 50 more silent handshakes held open while a real client is served.
            let idle = try (0..<50).map { _ in try RawClient(port: port) }
            let served = try ProcessRunner.run(
                "curl",
                [
                    "-s", "--max-time", "5", "--cacert", ca, "https://localhost:\(port)/hello",
                    "--resolve", "localhost:\(port):127.0.0.1"
                ]
            ).stdout
            let silentClosed = silent.readAll(timeout: 5).closed
            let partialClosed = partial.readAll(timeout: 5).closed
            let idleClosed = idle.filter { $0.readAll(timeout: 3).closed }.count
            return (silentClosed, partialClosed, served, idleClosed)
        }
        #expect(outcome.served == "hello", "a real client is served while handshakes are pending")
        #expect(outcome.silent, "a client that sends nothing is closed after the handshake timeout")
        #expect(outcome.partial, "a client that sends half a ClientHello is closed after the handshake timeout")
        #expect(outcome.idleHeld == 50)
        // The server counts a connection closed just after closing its socket: allow it a moment.
        for _ in 0..<20 where server.openConnections > 0 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(server.openConnections == 0)
    }

    @Test func defaultTimeoutKeepsAPendingHandshakeLonger() async throws {
        let (configuration, _) = try await offPool { [self] in try tls(timeout: .seconds(10)) }
        let (server, port) = try await startTestServer(tls: configuration)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let closed = try await offPool { () -> Bool in
            let silent = try RawClient(port: port)
            return silent.readAll(timeout: 2).closed
        }
        #expect(!closed, "with a 10 s handshake timeout the connection is still open after 2 s")
    }
}
