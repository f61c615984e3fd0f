import Foundation
import HTTPClientCore
import HTTPWire
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Our client against nginx from apt, started with its own config and prefix on a free loopback port.
@Suite(.serialized) struct NginxInteropTests {
    final class Nginx {
        let process = Process()
        let port: Int
        let prefix: String

        /// With `tls` (certificate and key paths) the server listens with `ssl http2` (nginx 1.22 syntax).
        init(tls: (cert: String, key: String)? = nil) async throws {
            guard let nginx = ProcessRunner.which("nginx") else { throw GatewayNginxMissing() }
            prefix = ProcessRunner.temporaryDirectory("nginx-interop")
            port = try freeLoopbackPort()
            try FileManager.default.createDirectory(atPath: "\(prefix)/logs", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: "\(prefix)/html", withIntermediateDirectories: true)
            try String(repeating: "0123456789abcdef", count: 65536).write(
                toFile: "\(prefix)/html/big.txt", atomically: true, encoding: .utf8)
            let listen =
                tls.map {
                    "listen 127.0.0.1:\(port) ssl http2; ssl_certificate \($0.cert); ssl_certificate_key \($0.key);"
                } ?? "listen 127.0.0.1:\(port);"
            let config = """
                worker_processes 1;
                pid \(prefix)/nginx.pid;
                error_log \(prefix)/logs/error.log;
                events { worker_connections 256; }
                http {
                    access_log off;
                    client_body_temp_path \(prefix)/body; proxy_temp_path \(prefix)/proxy;
                    fastcgi_temp_path \(prefix)/fcgi; uwsgi_temp_path \(prefix)/uwsgi; scgi_temp_path \(prefix)/scgi;
                    server {
                        \(listen)
                        root \(prefix)/html;
                        location = /proto { return 200 "$server_protocol $connection"; }
                        location = /json { default_type application/json; return 200 '{"ok":true}'; }
                        location = /close { keepalive_timeout 0; return 200 'bye'; }
                        location = /echo-method { return 200 $request_method; }
                    }
                }
                """
            try config.write(toFile: "\(prefix)/nginx.conf", atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", prefix, "-c", "\(prefix)/nginx.conf", "-g", "daemon off;"]
            try ChildProcess.launch(process)
            for _ in 0..<100 {
                if (try? RawClient(port: port)) != nil { return }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        func stop() async {
            if process.isRunning { kill(process.processIdentifier, SIGQUIT) }
            for _ in 0..<250 where process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    struct GatewayNginxMissing: Error {}

    @Test func getsKeepAliveLargeBodiesHeadAndConnectionClose() async throws {
        let nginx = try await Nginx()
        let client = HTTPClient()
        let base = "http://127.0.0.1:\(nginx.port)"
        let json = try await client.execute(HTTPClientRequest(url: "\(base)/json"))
        #expect(json.status == 200)
        #expect(json.body == Array("{\"ok\":true}".utf8))
        #expect(json.headers.first(name: "Server")?.hasPrefix("nginx") == true)
        let again = try await client.execute(HTTPClientRequest(url: "\(base)/json"))
        #expect(again.timings.connect == nil, "reused nginx's keep-alive connection")
        let big = try await client.execute(HTTPClientRequest(url: "\(base)/big.txt"))
        #expect(big.body.count == 16 * 65536)
        let head = try await client.execute(HTTPClientRequest(method: .head, url: "\(base)/big.txt"))
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers.first(name: "Content-Length") == String(16 * 65536))
        let missing = try await client.execute(HTTPClientRequest(url: "\(base)/missing"))
        #expect(missing.status == 404)
        for _ in 0..<3 {
            let bye = try await client.execute(HTTPClientRequest(url: "\(base)/close"))
            #expect(bye.body == Array("bye".utf8))
        }
        let post = try await client.execute(
            HTTPClientRequest(method: .post, url: "\(base)/echo-method", body: .bytes(Array("x".utf8))))
        #expect(post.body == Array("POST".utf8))
        let chunked = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(base)/echo-method",
                body: .stream(patternStream(total: 300_000, pulled: AtomicCounter()), length: nil)))
        #expect(chunked.body == Array("POST".utf8), "nginx took a chunked upload")
        // nginx answers `return` at once: when that answer is complete before the body is, the client stops sending
        // and closes that connection; either way the next request goes out in sync.
        let afterChunked = try await client.execute(HTTPClientRequest(url: "\(base)/json"))
        #expect(afterChunked.body == Array("{\"ok\":true}".utf8))
        await nginx.stop()
    }

    @Test func speaksH2OverTLSToNginxOnOneConnection() async throws {
        let (ca, cert, key) = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory())
        let nginx = try await Nginx(tls: (cert, key))
        var configuration = HTTPClient.Configuration()
        configuration.tls = TLSClientConfiguration(caFile: ca)
        let client = HTTPClient(configuration: configuration)
        let base = "https://127.0.0.1:\(nginx.port)"
        let protocols = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    String(
                        decoding: try await client.execute(HTTPClientRequest(url: "\(base)/proto")).body, as: UTF8.self)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(protocols.count == 20)
        #expect(protocols.allSatisfy { $0.hasPrefix("HTTP/2.0 ") }, "\(protocols.first ?? "")")
        #expect(Set(protocols).count == 1, "all 20 requests shared nginx's connection number")
        let big = try await client.execute(HTTPClientRequest(url: "\(base)/big.txt"))
        #expect(big.head.version == .http2)
        #expect(big.body.count == 16 * 65536)
        let head = try await client.execute(HTTPClientRequest(method: .head, url: "\(base)/big.txt"))
        #expect(head.status == 200 && head.body.isEmpty)
        let post = try await client.execute(
            HTTPClientRequest(method: .post, url: "\(base)/echo-method", body: .bytes(Array("x".utf8))))
        #expect(post.body == Array("POST".utf8))
        let streamed = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(base)/echo-method",
                body: .stream(patternStream(total: 300_000, pulled: AtomicCounter()), length: nil)))
        #expect(streamed.body == Array("POST".utf8), "an h2 upload of unknown length, ended by END_STREAM")
        let missing = try await client.execute(HTTPClientRequest(url: "\(base)/missing"))
        #expect(missing.status == 404)
        #expect(missing.headers.first(name: "server")?.hasPrefix("nginx") == true)
        await nginx.stop()
    }
}
