import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket upstream (`faults/websocket_peer.py server`, Python's `websockets`): it records every handshake it
/// receives and echoes, says bye, refuses or stays silent by path.
private final class WebSocketUpstream {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/websocket_peer.py").path
    let process = Process()
    let port: Int
    private let recordPath: String
    private let progressPath: String

    init(tls: (cert: String, key: String)? = nil) async throws {
        let directory = ProcessRunner.temporaryDirectory("websocket-upstream")
        let portFile = "\(directory)/port"
        recordPath = "\(directory)/handshakes.jsonl"
        progressPath = "\(directory)/progress"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        var arguments = [
            Self.script, "server", "--port-file", portFile, "--record", recordPath, "--lifetime", "120",
            "--progress", progressPath
        ]
        if let tls { arguments += ["--cert", tls.cert, "--key", tls.key] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try ChildProcess.launch(process)
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                self.port = port
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        process.terminate()
        throw GatewayTestError("the WebSocket upstream did not start")
    }

    /// Every handshake received so far: its path and headers (name, value) in order.
    var handshakes: [(path: String, headers: [(String, String)])] {
        let text = (try? String(contentsOfFile: recordPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let path = object["path"] as? String, let headers = object["headers"] as? [[String]]
            else { return nil }
            return (path, headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil })
        }
    }

    /// How each connection that ended so far was closed: its path, and the close code and reason the gateway sent
    /// (1006 and empty when no close frame came).
    var closes: [(path: String, code: Int, reason: String)] {
        let text = (try? String(contentsOfFile: recordPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let path = object["closed"] as? String, let code = object["code"] as? Int
            else { return nil }
            return (path, code, object["reason"] as? String ?? "")
        }
    }

    /// The MiB a `/flood` connection has sent so far.
    var floodedMebibytes: Int {
        Int((try? String(contentsOfFile: progressPath, encoding: .utf8)) ?? "") ?? 0
    }

    deinit {
        if process.isRunning { _ = ProcessRunner.stop(process, signal: SIGKILL, timeout: 5) }
    }
}

/// A WebSocket upstream that accepts every handshake and then neither reads nor sends a byte (a Close it is sent
/// included): our own server answering 101 with a stream that never yields.
private final class MuteWebSocketUpstream: HTTPServerHandler {
    private let serving = LoopbackServer()
    private let accepted = Atomic<Int>(0)
    var port: Int { serving.port }
    /// Handshakes accepted so far.
    var handshakes: Int { accepted.load(ordering: .relaxed) }

    static func start() async throws -> MuteWebSocketUpstream {
        let upstream = MuteWebSocketUpstream()
        try await upstream.serving.start(upstream)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard request.upgradeInput != nil, let key = request.head.headers.first(name: "Sec-WebSocket-Key") else {
            return HTTPServerResponse(status: 400, body: Array("not a handshake".utf8))
        }
        accepted.add(1, ordering: .relaxed)
        let accept = Data(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
        return HTTPServerResponse(
            head: HTTPResponseHead(
                status: 101,
                headers: [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": accept
                ]), body: .stream(ByteStream()))
    }
}

/// The value of the first header named `name` (any case).
private func header(_ name: String, in headers: [(String, String)]) -> String? {
    headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
}

/// Runs `faults/websocket_peer.py client` and returns its JSON report.
private func webSocketClient(_ url: String, _ arguments: [String] = []) async throws -> [String: Any] {
    let output = try await offPool {
        try ProcessRunner.run(
            "/usr/bin/python3", [WebSocketUpstream.script, "client", "--url", url] + arguments, timeout: 60)
    }
    guard let line = output.stdout.split(separator: "\n").last,
        let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else {
        throw GatewayTestError("no report from the WebSocket client: \(output.stdout) \(output.stderr)")
    }
    return report
}

/// Runs `faults/h2_websocket_client.py` (a WebSocket over HTTP/2, RFC 8441) against the gateway's `port` and returns
/// its JSON report.
private func http2WebSocketClient(port: Int, path: String, _ arguments: [String] = []) async throws -> [String: Any] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/h2_websocket_client.py").path
    let output = try await offPool {
        try ProcessRunner.run(
            "/usr/bin/python3", [script, "--port", String(port), "--path", path] + arguments, timeout: 60)
    }
    guard let line = output.stdout.split(separator: "\n").last,
        let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else {
        throw GatewayTestError("no report from the HTTP/2 WebSocket client: \(output.stdout) \(output.stderr)")
    }
    return report
}

private func headers(of report: [String: Any], _ key: String = "response_headers") -> [(String, String)] {
    ((report[key] as? [[String]]) ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
}

/// WebSockets through a `websocket: true` route: the handshake is an upstream call like any other (credentials,
/// forwarding headers, request id, access log), and after the upstream's 101 both connections are one byte tunnel.
@Suite(.serialized) struct GatewayWebSocketTests {
    static let token = "ws-upstream-token-7f3a"

    private func config(upstream: String, extra: String = "") -> String {
        """
        \(GatewayProcess.listeners)
        upstreams:
          chat:
            base_url: "\(upstream)"
            access_token: { type: bearer, token: "\(Self.token)" }
        \(extra)
        routes:
          - { name: chat, match: { path_prefix: /ws }, upstream: chat, rewrite: { strip_prefix: /ws }, websocket: true }
          - { name: plain, match: { path_prefix: /plain }, upstream: chat, rewrite: { strip_prefix: /plain } }
        """
    }

    /// A gateway with a TLS listener on `tlsPort` (the certificate in `files`) beside its cleartext one, relaying
    /// `/ws` WebSockets to the upstream `chat`, whose keys are `upstream` (indented under it).
    private func tlsGateway(tlsPort: Int, files: (ca: String, cert: String, key: String), upstream: String) async throws
        -> GatewayProcess
    {
        try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  tls: { listen: ["127.0.0.1:\(tlsPort)"], certificate: \(files.cert), private_key: \(files.key) }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  chat:
                \(upstream)
                routes:
                  - { name: chat, match: { path_prefix: /ws }, upstream: chat, rewrite: { strip_prefix: /ws }, websocket: true }
                """)
    }

    @Test func messagesGoBothWaysWithTheUpstreamsCredentialsAndAreLogged() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let megabyte = 1 << 20
        let report = try await webSocketClient(
            "ws://127.0.0.1:\(gateway.port)/ws/echo?room=7",
            [
                "--messages", "3", "--size", String(megabyte), "--header", "Authorization: Bearer the-clients-own"
            ])
        #expect(report["ok"] as? Bool == true, "\(report)")
        #expect(report["echoed"] as? Int == 6)
        #expect(report["pong"] as? Bool == true, "control frames pass too")
        #expect(report["close_code"] as? Int == 1000, "the close handshake goes through")
        let answer = headers(of: report)
        let requestID = try #require(header("X-Request-Id", in: answer))
        #expect(header("Sec-WebSocket-Accept", in: answer) != nil)

        let handshake = try #require(upstream.handshakes.last)
        #expect(handshake.path == "/echo?room=7", "rewritten like any request on the route")
        #expect(
            header("Authorization", in: handshake.headers) == "Bearer \(Self.token)",
            "the upstream's token replaces the client's")
        #expect(!handshake.headers.contains { $0.1.contains("the-clients-own") })
        #expect(header("Upgrade", in: handshake.headers) == "websocket")
        #expect(header("Connection", in: handshake.headers) == "Upgrade")
        #expect(header("X-Request-Id", in: handshake.headers) == requestID)
        #expect(header("X-Forwarded-For", in: handshake.headers) == "127.0.0.1")
        #expect(header("Sec-WebSocket-Key", in: handshake.headers) != nil)

        let line = try #require(await gateway.accessLog(atLeast: 1).first)
        #expect(line["status"] as? Int == 101)
        #expect(line["route"] as? String == "chat")
        #expect(line["request_id"] as? String == requestID)
        #expect((line["bytes_in"] as? Int ?? 0) > 3 * megabyte, "the client's frames, counted: \(line)")
        #expect((line["bytes_out"] as? Int ?? 0) > 3 * megabyte, "the upstream's frames, counted: \(line)")
        #expect(line["upstream_error"] == nil || line["upstream_error"] is NSNull, "\(line)")
        #expect(!gateway.stdout.contains(Self.token) && !gateway.stderr.contains(Self.token))
    }

    @Test func theUpstreamsCloseReachesTheClient() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let report = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/bye", ["--expect-bye"])
        #expect(report["ok"] as? Bool == true, "\(report)")
        #expect(report["close_code"] as? Int == 4001)
        #expect(await gateway.accessLog(atLeast: 1).first?["status"] as? Int == 101)
    }

    @Test func aRefusedHandshakeIsTheUpstreamsAnswer() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let report = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/refuse")
        #expect(report["status"] as? Int == 403, "\(report)")
        let refused = headers(of: report, "refused_headers")
        #expect(header("X-Refused", in: refused) == "yes")
        #expect(header("X-Request-Id", in: refused) != nil)
        #expect(header("Upgrade", in: refused) == nil)
        #expect(await gateway.accessLog(atLeast: 1).first?["status"] as? Int == 403)
    }

    /// docs/reliability.md H1-39: a route without `websocket: true` does not forward the upgrade.
    @Test func anUpgradeOnARouteWithoutWebsocketIsNotForwarded() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let report = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/plain/echo")
        #expect(report["status"] as? Int == 426, "the upstream saw a plain GET: \(report)")
        let handshake = try #require(upstream.handshakes.last)
        #expect(header("Upgrade", in: handshake.headers) == nil)
        #expect(header("Connection", in: handshake.headers) == nil)
    }

    @Test func wssToTheGatewayAndToAnHTTPSUpstream() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-wss")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let upstream = try await WebSocketUpstream(tls: (files.cert, files.key))
        let tlsPort = try freeLoopbackPort()
        let gateway = try await tlsGateway(
            tlsPort: tlsPort, files: files,
            upstream: """
                    base_url: "https://localhost:\(upstream.port)"
                    tls: { ca_file: \(files.ca) }
                    access_token: { type: bearer, token: "\(Self.token)" }
                """)
        let report = try await webSocketClient(
            "wss://localhost:\(tlsPort)/ws/echo",
            [
                "--ca", files.ca, "--messages", "2", "--size", String(256 * 1024)
            ])
        #expect(report["ok"] as? Bool == true, "\(report)")
        #expect(report["echoed"] as? Int == 4)
        let handshake = try #require(upstream.handshakes.last)
        #expect(header("X-Forwarded-Proto", in: handshake.headers) == "https")
        #expect(header("Authorization", in: handshake.headers) == "Bearer \(Self.token)")
        #expect(await gateway.accessLog(atLeast: 1).first?["status"] as? Int == 101)
    }

    /// RFC 8441: an HTTP/2 client's extended CONNECT becomes the upstream's HTTP/1.1 handshake (with a key of the
    /// gateway's), and its 200 opens the tunnel over the stream, with flow control both ways.
    @Test func http2ClientsOpenWebSocketsWithExtendedConnect() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let report = try await http2WebSocketClient(
            port: gateway.port, path: "/ws/echo?room=h2",
            [
                "--messages", "3", "--size", String(200 * 1024), "--header", "Authorization: Bearer the-clients-own",
                "--header", "X-Request-Id: h2-tunnel", "--header", "Sec-WebSocket-Protocol: chat"
            ])
        #expect(report["ok"] as? Bool == true, "\(report)")
        #expect(report["enable_connect_protocol"] as? Int == 1, "SETTINGS_ENABLE_CONNECT_PROTOCOL is advertised")
        #expect(report["status"] as? Int == 200)
        #expect(report["echoed"] as? Int == 6, "200 KiB messages both ways: more than a stream window")
        #expect(report["pong"] as? Bool == true)
        #expect(report["close_code"] as? Int == 1000)
        #expect(report["stream_ended"] as? Bool == true, "the upstream's close ends the stream")
        let response = headers(of: report)
        #expect(header("sec-websocket-accept", in: response) == nil, "no HTTP/1.1 accept value over HTTP/2")
        #expect(header("upgrade", in: response) == nil)
        #expect(header("x-request-id", in: response) == "h2-tunnel")

        let handshake = try #require(upstream.handshakes.last)
        #expect(handshake.path == "/echo?room=h2")
        #expect(header("Upgrade", in: handshake.headers) == "websocket")
        #expect(header("Sec-WebSocket-Version", in: handshake.headers) == "13")
        let key = try #require(header("Sec-WebSocket-Key", in: handshake.headers))
        #expect(Data(base64Encoded: key)?.count == 16, "a key the gateway made: \(key)")
        #expect(header("Authorization", in: handshake.headers) == "Bearer \(Self.token)")
        #expect(header("Via", in: handshake.headers) == "2 moya-gateway")
        #expect(header("X-Request-Id", in: handshake.headers) == "h2-tunnel")
        let line = try #require(await gateway.accessLog(atLeast: 1).first)
        #expect(line["status"] as? Int == 101)
        #expect(line["route"] as? String == "chat")
        #expect((line["bytes_in"] as? Int ?? 0) > 6 * 200 * 1024, "\(line)")
        #expect((line["bytes_out"] as? Int ?? 0) > 6 * 200 * 1024, "\(line)")
    }

    /// Over HTTP/2 a refused handshake is the upstream's answer too, and a route without `websocket: true` refuses
    /// the extended CONNECT itself (a plain GET's 200 would tell the client its tunnel is open).
    @Test func http2TunnelsThatCannotOpenAreRefused() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let refused = try await http2WebSocketClient(port: gateway.port, path: "/ws/refuse")
        #expect(refused["status"] as? Int == 403, "\(refused)")
        #expect((refused["body"] as? String)?.contains("no websocket for you") == true)
        #expect(header("x-refused", in: headers(of: refused)) == "yes")
        let handshakes = upstream.handshakes.count

        let plain = try await http2WebSocketClient(port: gateway.port, path: "/plain/echo")
        #expect(plain["status"] as? Int == 405, "\(plain)")
        #expect(header("allow", in: headers(of: plain)) == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
        #expect((plain["body"] as? String)?.contains("method_not_allowed") == true)
        #expect(upstream.handshakes.count == handshakes, "nothing was sent upstream")
        let lines = await gateway.accessLog(atLeast: 2)
        #expect(lines.map { $0["status"] as? Int } == [403, 405])
    }

    /// `wss` from an HTTP/2 client: TLS with ALPN h2, then the extended CONNECT.
    @Test func http2WebSocketsOverTLS() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-h2-wss")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let upstream = try await WebSocketUpstream()
        let tlsPort = try freeLoopbackPort()
        let gateway = try await tlsGateway(
            tlsPort: tlsPort, files: files,
            upstream: """
                    base_url: "http://127.0.0.1:\(upstream.port)"
                """)
        let report = try await http2WebSocketClient(
            port: tlsPort, path: "/ws/echo",
            [
                "--tls", "--ca", files.ca, "--authority", "localhost:\(tlsPort)", "--messages", "2", "--size", "70000"
            ])
        #expect(report["ok"] as? Bool == true, "\(report)")
        #expect(report["echoed"] as? Int == 4)
        #expect(report["close_code"] as? Int == 1000)
        let handshake = try #require(upstream.handshakes.last)
        #expect(header("X-Forwarded-Proto", in: handshake.headers) == "https")
        #expect(header("Host", in: handshake.headers) == "127.0.0.1:\(upstream.port)")
        #expect(await gateway.accessLog(atLeast: 1).first?["status"] as? Int == 101)
    }

    /// An upstream whose 101 carries the wrong `Sec-WebSocket-Accept` did not understand the handshake: 502, no tunnel,
    /// for an HTTP/1.1 client (whose key was sent) and an HTTP/2 one (whose key the gateway made).
    @Test func aWrongAcceptValueIsA502() async throws {
        let upstream = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1),
            handler: HTTPHandlerClosure { request in
                guard request.upgradeInput != nil else { return HTTPServerResponse(status: 400, body: []) }
                return HTTPServerResponse(
                    head: HTTPResponseHead(
                        status: 101,
                        headers: [
                            "Upgrade": "websocket", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
                        ]), body: .stream(ByteStream()))
            })
        try await upstream.start()
        let gateway = try await GatewayProcess(
            config: config(upstream: "http://127.0.0.1:\(upstream.localAddresses[0].port)"))
        let client = try RawClient(port: gateway.port)
        client.send(
            "GET /ws/echo HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\n\r\n")
        let answer = client.read(until: { $0.contains("}") }, timeout: 5)
        #expect(answer.hasPrefix("HTTP/1.1 502"), "\(answer)")
        #expect(answer.contains("\"error\":\"bad_gateway\""))
        let http2 = try await http2WebSocketClient(port: gateway.port, path: "/ws/echo")
        #expect(http2["status"] as? Int == 502, "\(http2)")
        let lines = await gateway.accessLog(atLeast: 2)
        #expect(lines.map { $0["status"] as? Int } == [502, 502])
        #expect(
            lines.allSatisfy {
                $0["upstream_error"] as? String == "upstream's Sec-WebSocket-Accept does not match the key sent"
            },
            "\(lines)")
        await upstream.shutdown(timeout: .seconds(1))
    }

    @Test func anUnreachableUpstreamIsA502() async throws {
        let closedPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(closedPort)"))
        let report = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/echo")
        #expect(report["status"] as? Int == 502, "\(report)")
        let line = try #require(await gateway.accessLog(atLeast: 1).first)
        #expect(line["status"] as? Int == 502)
    }

    /// Back-pressure through the tunnel (docs/reliability.md UP-08's bound for tunnels): an upstream sending as fast as it
    /// can to a client that reads 2.5 MiB/s gets only as far ahead as the buffers in between, and the gateway's memory
    /// stays flat; then the client reads the rest at full speed and gets every byte.
    @Test func aFloodingUpstreamIsHeldBackByASlowClientInBoundedMemory() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let pid = gateway.process.processIdentifier
        _ = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/echo", ["--messages", "1"])
        let idle = ProcessMemory.resident(pid)
        let mebibytes = 256
        let client = try RawClient(port: gateway.port)
        client.send(
            "GET /ws/flood?mb=\(mebibytes) HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        let head = client.read(until: { $0.contains("\r\n\r\n") })
        #expect(head.hasPrefix("HTTP/1.1 101 "), "\(head)")
        var taken =
            head.utf8.count
            - (head.range(of: "\r\n\r\n").map { head.distance(from: head.startIndex, to: $0.upperBound) } ?? 0)
        var peak = idle
        var buffer = [UInt8](repeating: 0, count: 128 * 1024)
        for _ in 0..<60 {
            let count = recv(client.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { taken += count }
            peak = max(peak, ProcessMemory.resident(pid))
            try await Task.sleep(for: .milliseconds(50))
        }
        let ahead = upstream.floodedMebibytes - taken >> 20
        #expect(taken > 1 << 20, "the slow client was served: \(taken) bytes")
        #expect(ahead < 64, "the upstream got \(ahead) MiB ahead of the client")
        #expect(peak - idle < 64 << 20, "RSS grew \(Double(peak - idle) / 1_048_576) MiB while the client was slow")
        // Every 1 MiB message is framed with 10 bytes; the upstream's close frame follows.
        let whole = mebibytes * ((1 << 20) + 10)
        let deadline = ContinuousClock.now + .seconds(60)
        while taken < whole, ContinuousClock.now < deadline {
            let count = recv(client.fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            taken += count
            peak = max(peak, ProcessMemory.resident(pid))
        }
        #expect(taken >= whole, "the whole flood arrived: \(taken) of \(whole) bytes")
        #expect(peak - idle < 64 << 20, "RSS grew \(Double(peak - idle) / 1_048_576) MiB relaying \(mebibytes) MiB")
    }

    /// Back-pressure the other way: a client sending as fast as it can to an upstream that reads nothing is held back
    /// by the buffers in between, and the gateway's memory stays flat.
    @Test func aFloodingClientIsHeldBackByAStalledUpstreamInBoundedMemory() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(config: config(upstream: "http://127.0.0.1:\(upstream.port)"))
        let pid = gateway.process.processIdentifier
        _ = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/echo", ["--messages", "1"])
        let idle = ProcessMemory.resident(pid)
        let client = try RawClient(port: gateway.port)
        client.send(
            "GET /ws/stall HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        #expect(client.read(until: { $0.contains("\r\n\r\n") }).hasPrefix("HTTP/1.1 101 "))
        // Masked binary frames of 64 KiB (the gateway relays bytes; the upstream reads none of them).
        var frame: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4]
        frame += [UInt8](repeating: 0x5A, count: 64 * 1024)
        var sent = 0
        var peak = idle
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            let count = frame.withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { sent += count } else { try await Task.sleep(for: .milliseconds(20)) }
            peak = max(peak, ProcessMemory.resident(pid))
        }
        #expect(sent > 1 << 20, "the tunnel took the client's first bytes: \(sent)")
        #expect(sent < 64 << 20, "the client got \(sent >> 20) MiB in before the stall held it back")
        #expect(peak - idle < 64 << 20, "RSS grew \(Double(peak - idle) / 1_048_576) MiB")
    }

    /// A gateway relaying WebSockets under `/ws` to the upstream on `upstreamPort`, with a drain timeout (20 s) far
    /// longer than the drain tests allow it.
    private static func drainingGateway(upstreamPort: Int) async throws -> GatewayProcess {
        try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  limits: { drain_timeout: 20s }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  chat: { base_url: "http://127.0.0.1:\(upstreamPort)" }
                routes:
                  - { name: chat, match: { path_prefix: /ws }, upstream: chat, rewrite: { strip_prefix: /ws }, websocket: true }
                """)
    }

    /// A drain closes open tunnels with the WebSocket Close handshake instead of holding them to `drain_timeout`: the
    /// client and the upstream each get a Close with 1001 ("going away") at once, over HTTP/1.1 and HTTP/2, both
    /// sides close, and the gateway exits long before the timeout; each tunnel still gets its access-log line.
    @Test func aDrainSendsOpenTunnelsACloseAndEndsWithThem() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await Self.drainingGateway(upstreamPort: upstream.port)
        let port = gateway.port
        let base = "ws://127.0.0.1:\(port)/ws"
        async let first = webSocketClient("\(base)/silent?n=1", ["--wait-close", "30"])
        async let second = webSocketClient("\(base)/silent?n=2", ["--wait-close", "30"])
        async let overHTTP2 = http2WebSocketClient(port: port, path: "/ws/silent?n=3", ["--wait-close", "30"])
        for _ in 0..<200 where upstream.handshakes.count < 3 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(300))
        let stopping = ContinuousClock.now
        let status = gateway.stop(timeout: 30)
        let stopped = ContinuousClock.now - stopping
        #expect(status == 0)
        #expect(stopped < .seconds(5), "the drain ended with its tunnels, not at its 20 s timeout: \(stopped)")
        for report in [try await first, try await second] {
            #expect(report["ok"] as? Bool == true && report["close_code"] as? Int == 1001, "\(report)")
            #expect(report["close_reason"] as? String == "going away", "\(report)")
            #expect((report["closed_after"] as? Double ?? 99) < 5, "\(report)")
        }
        let h2 = try await overHTTP2
        #expect(h2["close_code"] as? Int == 1001, "an HTTP/2 client's tunnel gets the Close too: \(h2)")
        for _ in 0..<100 where upstream.closes.count < 3 { try await Task.sleep(for: .milliseconds(20)) }
        let closes = upstream.closes
        #expect(
            closes.count == 3 && closes.allSatisfy { $0.code == 1001 && $0.reason == "going away" },
            "the upstream heard the Close from the gateway: \(closes)")
        let lines = gateway.accessLog.filter { $0["status"] as? Int == 101 }
        #expect(lines.count == 3, "\(gateway.stdout)")
        let draining = gateway.stdout.split(separator: "\n").first { $0.contains("\"msg\":\"draining\"") } ?? ""
        #expect(
            draining.contains("\"websocket_tunnels\":\"3\""), "the drain says how many tunnels it closed: \(draining)")
    }

    /// The drain waits for no upstream: once a tunnel's client has its Close and its connection is closed, the
    /// upstream side is closed too, whether or not the upstream answered its own Close.
    @Test func aTunnelWhoseUpstreamNeverAnswersTheCloseDoesNotHoldTheDrain() async throws {
        let upstream = try await MuteWebSocketUpstream.start()
        let gateway = try await Self.drainingGateway(upstreamPort: upstream.port)
        let url = "ws://127.0.0.1:\(gateway.port)/ws/stall"
        async let report = webSocketClient(url, ["--wait-close", "20"])
        for _ in 0..<100 where upstream.handshakes == 0 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        let stopping = ContinuousClock.now
        let status = gateway.stop(timeout: 10)
        let stopped = ContinuousClock.now - stopping
        #expect(status == 0)
        #expect(stopped < .seconds(5), "not held to the 20 s timeout by the mute upstream: \(stopped)")
        let closed = try await report
        #expect(closed["ok"] as? Bool == true && closed["close_code"] as? Int == 1001, "told at once: \(closed)")
        #expect((closed["closed_after"] as? Double ?? 99) < 5, "\(closed)")
        #expect(gateway.accessLog.first?["status"] as? Int == 101, "\(gateway.stdout)")
        await upstream.shutdown()
    }

    /// The upstream's `timeout.response` is the tunnel's idle limit (nginx's `proxy_read_timeout`) unless the route
    /// sets `websocket: { idle_timeout: }`; the route's `timeout` bounds only the handshake.
    @Test func aSilentTunnelIsClosedAfterTheUpstreamsResponseTimeout() async throws {
        let upstream = try await WebSocketUpstream()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  chat:
                    base_url: "http://127.0.0.1:\(upstream.port)"
                    timeout: { response: 1s }
                routes:
                  - { name: chat, match: { path_prefix: /ws }, upstream: chat, rewrite: { strip_prefix: /ws }, websocket: true,
                      timeout: 300ms }
                  - { name: short, match: { path_prefix: /short }, upstream: chat, rewrite: { strip_prefix: /short },
                      websocket: { idle_timeout: 400ms } }
                """)
        let report = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/ws/silent", ["--wait-close", "10"])
        #expect(report["ok"] as? Bool == true, "\(report)")
        let closedAfter = try #require(report["closed_after"] as? Double)
        #expect(closedAfter > 0.8 && closedAfter < 5, "closed after \(closedAfter) s, not at the route's 300 ms")
        // A route's own idle limit replaces the upstream's.
        let short = try await webSocketClient("ws://127.0.0.1:\(gateway.port)/short/silent", ["--wait-close", "10"])
        let shortClosedAfter = try #require(short["closed_after"] as? Double, "\(short)")
        #expect(shortClosedAfter > 0.3 && shortClosedAfter < 0.9, "closed after \(shortClosedAfter) s, not at 1 s")
        let line = try #require(await gateway.accessLog(atLeast: 1).first)
        #expect(line["status"] as? Int == 101)
        #expect((line["upstream_error"] as? String)?.contains("timed out") == true, "\(line)")
        #expect((line["duration_ms"] as? Double ?? 0) > 800, "the line has the tunnel's life: \(line)")
        // The latency histogram has the handshake, not the tunnel's second.
        let metrics = try ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(gateway.adminPort)/metrics"]).stdout
        let sum = metrics.split(separator: "\n")
            .first { $0.hasPrefix("moya_gateway_request_duration_seconds_sum{route=\"chat\"}") }
            .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        #expect(sum.map { $0 < 0.5 } == true, "\(metrics)")
    }
}
