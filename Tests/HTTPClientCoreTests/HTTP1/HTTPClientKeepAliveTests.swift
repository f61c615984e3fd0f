import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A Python `http.server` that closes a connection idle for 1 s and, like Node.js, says so (`Keep-Alive: timeout=1`),
/// or, like nginx and Go, does not (`announces: false`); it answers with the method it saw.
private final class AdvertisingServer {
    static let script = """
        import http.server, sys
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 1
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n: self.rfile.read(n)
                body = self.command.encode()
                self.send_response(200)
                if sys.argv[2] == "1": self.send_header("Keep-Alive", "timeout=1, max=100")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            do_GET = do_POST = answer
            def log_message(self, *args): pass
        http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
        """
    let process = Process()
    let port: Int

    init(announces: Bool = true) async throws {
        port = try freeLoopbackPort()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "exec /usr/bin/python3 -c \"$0\" \"$1\" \"$2\" >/dev/null 2>&1", Self.script, String(port),
            announces ? "1" : "0"
        ]
        try ChildProcess.launch(process)
        for _ in 0..<100 {
            if let probe = try? RawClient(port: port) {
                _ = probe
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HTTPClientError.connectFailed(reason: "the Python server did not start")
    }

    deinit { ProcessRunner.stop(process) }
}

/// A server that says how long it keeps an idle connection (`Keep-Alive: timeout=`) is not sent a request on a
/// connection about to reach that limit: such a request can cross the server's close on the wire, and a POST lost
/// that way cannot be retried (docs/reliability.md UP-10).
@Suite(.serialized) struct HTTPClientKeepAliveTests {
    @Test func aConnectionNearTheServersKeepAliveTimeoutIsNotReused() async throws {
        let server = try await AdvertisingServer()
        try await Self.expectReuseBounded(
            client: HTTPClient(), port: server.port, by: "the server's 1 s (reuse limit 0.5 s)")
    }

    /// A server that keeps its limit to itself (nginx, Go) is met by the client's own `idleTimeout` set below it: an
    /// idle connection is not reused past it, whether or not the loop's sweep has closed it yet.
    @Test func theClientsIdleTimeoutBoundsReuseWhenTheServerSaysNothing() async throws {
        let server = try await AdvertisingServer(announces: false)
        var configuration = HTTPClient.Configuration()
        configuration.idleTimeout = .milliseconds(500)
        try await Self.expectReuseBounded(
            client: HTTPClient(configuration: configuration), port: server.port,
            by: "the client's idle timeout, 0.5 s")
    }

    /// A GET opens a connection; a POST after 0.1 s idle reuses it; one after another 0.7 s idle, past the 0.5 s
    /// limit (`limit` says whose), gets a new one and succeeds.
    static func expectReuseBounded(client: HTTPClient, port: Int, by limit: String) async throws {
        let url = "http://127.0.0.1:\(port)/"
        let first = try await client.execute(HTTPClientRequest(url: url))
        #expect(first.timings.connect != nil)
        try await Task.sleep(for: .milliseconds(100))
        let soon = try await client.execute(HTTPClientRequest(method: .post, url: url, body: .bytes([1])))
        #expect(soon.timings.connect == nil, "idle 0.1 s, within \(limit): reused")
        try await Task.sleep(for: .milliseconds(700))
        let late = try await client.execute(HTTPClientRequest(method: .post, url: url, body: .bytes([1])))
        #expect(late.status == 200 && late.body == Array("POST".utf8))
        #expect(late.timings.connect != nil, "idle 0.7 s, past \(limit): a new connection")
    }

    @Test func theAdvertisedTimeoutLessAMarginBoundsReuse() {
        #expect(HTTPClient.keepAliveReuseLimit("timeout=5, max=1000") == .seconds(4))
        #expect(HTTPClient.keepAliveReuseLimit("max=3,  Timeout = 2") == .seconds(1))
        #expect(HTTPClient.keepAliveReuseLimit("timeout=1") == .milliseconds(500))
        #expect(HTTPClient.keepAliveReuseLimit("timeout=0") == .zero)
        #expect(HTTPClient.keepAliveReuseLimit("max=5") == nil)
        #expect(HTTPClient.keepAliveReuseLimit("timeout=soon") == nil)
    }
}
