import Foundation
import HTTPServer
import NetCore
import TestSupport
import Testing

@Suite(.serialized) struct TLSServerTests {
    @Test func curlOverTLSWithGeneratedCertificateAndOldProtocolsRefused() async throws {
        let directory = ProcessRunner.temporaryDirectory()
        let (ca, cert, key) = try ProcessRunner.makeCertificates(in: directory)
        let tls = TLSServerConfiguration(defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key))
        let (server, port) = try await startTestServer(tls: tls)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let ok = try ProcessRunner.run("curl", ["-s", "--cacert", ca, "https://localhost:\(port)/hello",
                                                "--resolve", "localhost:\(port):127.0.0.1"])
        #expect(ok.stdout == "hello")
        let alpn = try ProcessRunner.run("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "http/1.1", "-CAfile", ca],
                                         input: Data("Q\n".utf8))
        #expect(alpn.stdout.contains("ALPN protocol: http/1.1"))
        for old in ["-tls1", "-tls1_1"] {
            let refused = try ProcessRunner.run("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", old, "-cipher", "DEFAULT:@SECLEVEL=0"],
                                                input: Data("Q\n".utf8))
            #expect(refused.stdout.contains("Cipher is (NONE)"), "\(old) must be refused")
            #expect(!refused.stdout.contains("BEGIN CERTIFICATE"))
        }
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let (_, closed) = client.readAll(timeout: 3)
        #expect(closed, "plaintext on the TLS port is closed")
    }
}
