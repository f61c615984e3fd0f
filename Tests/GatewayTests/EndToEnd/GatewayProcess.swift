import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The real `moya-gateway serve` binary, started on a config written for the test, with its output captured.
final class GatewayProcess {
    let process = Process()
    /// How the process ended, once ``stop(timeout:)`` has reaped it.
    private var stopStatus: Int32?
    let directory: String
    let port: Int
    let adminPort: Int
    let logPath: String
    let errPath: String
    let configPath: String

    /// How `serve` is told where its configuration is.
    enum ConfigLocation {
        /// `serve --config PATH`.
        case argument
        /// `$MOYA_GATEWAY_CONFIG`, with no `--config`.
        case environment
        /// Neither: `serve` reads `Configuration/gateway.yaml` below its working directory (the config is written
        /// there, and the process runs in ``directory``).
        case defaultPath
    }

    /// Writes `config` and `files` (paths relative to ``directory``, written first), with `PORT` and `ADMIN` replaced
    /// in both, and starts the gateway, told where its config is as `location` says (without `--config` it runs in
    /// ``directory``); waits for /readyz. `arguments` follow `serve` (`--watch`). `configFile` (relative to
    /// ``directory``) is where the config is read from instead of `gateway.yaml`; with it, `config` is not written
    /// and `setUp` (called with ``directory`` and the placeholder renderer before the start) makes the file (a
    /// Kubernetes volume's symlinks). `shellPrefix` runs in the shell before the gateway is exec'ed (for example
    /// `ulimit -n 64; `). `command`: the subcommand (`record` with its options, say).
    init(
        config: String, environment: [String: String] = [:], files: [String: String] = [:],
        location: ConfigLocation = .argument, arguments: [String] = [], configFile: String? = nil,
        shellPrefix: String = "", command: String = "serve",
        setUp: ((_ directory: String, _ render: (String) -> String) throws -> Void)? = nil
    ) async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-e2e")
        self.directory = directory
        port = try freeLoopbackPort()
        adminPort = try freeLoopbackPort()
        configPath =
            configFile.map { "\(directory)/\($0)" }
            ?? (location == .defaultPath ? "\(directory)/Configuration/gateway.yaml" : "\(directory)/gateway.yaml")
        logPath = "\(directory)/stdout.log"
        errPath = "\(directory)/stderr.log"
        for (path, contents) in files {
            try Self.write(Self.render(contents, port: port, admin: adminPort), to: "\(directory)/\(path)")
        }
        if configFile == nil { try Self.write(Self.render(config, port: port, admin: adminPort), to: configPath) }
        let ports = (main: port, admin: adminPort)
        try setUp?(directory) { Self.render($0, port: ports.main, admin: ports.admin) }
        guard let binary = CheckCommandTests.binary() else { throw GatewayTestError("moya-gateway is not built") }
        // Redirect with the shell (exec keeps the pid): handing FileHandles to Process makes Foundation close their
        // descriptors once more later, which can close a socket that reused the number.
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let serve =
            (location == .argument ? "\(command) --config \"$1\"" : command)
            + arguments.map { " '\($0)'" }.joined()
        process.arguments = [
            "-c", "\(shellPrefix)exec \"$0\" \(serve) >\"$2\" 2>\"$3\"", binary.path, configPath, logPath,
            errPath
        ]
        if location != .argument { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "MOYA_GATEWAY_CONFIG")
        if location == .environment { env["MOYA_GATEWAY_CONFIG"] = configPath }
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = nil
        try ChildProcess.launch(process)
        let client = HTTPClient()
        for _ in 0..<100 {
            if let ready = try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(adminPort)/readyz")),
                ready.status == 200
            {
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw GatewayTestError("gateway did not become ready: \(stderr)")
    }

    /// The `server` and `admin` sections most test configurations start with: one loop, the `PORT` and `ADMIN`
    /// placeholders.
    static let listeners = """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
        admin:
          listen: "127.0.0.1:ADMIN"
        """

    /// Writes `contents` to `path`, making its directory.
    private static func write(_ contents: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try contents.write(to: url, atomically: true, encoding: .utf8)
    }

    static func render(_ config: String, port: Int, admin: Int) -> String {
        config.replacingOccurrences(of: "PORT", with: String(port)).replacingOccurrences(
            of: "ADMIN", with: String(admin))
    }

    /// Replaces the config file (for reload tests).
    func rewriteConfig(_ config: String) throws {
        try Self.render(config, port: port, admin: adminPort).write(
            toFile: configPath, atomically: true, encoding: .utf8)
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// SIGTERM and wait for exit (bounded).
    @discardableResult
    func stop(timeout: Double = 10) -> Int32 {
        if let status = stopStatus { return status }
        let status = ProcessRunner.stop(process, signal: SIGTERM, timeout: timeout)
        stopStatus = status
        return status
    }

    /// Descriptors of the process open on files in `directory` (temporary files made without a name show as
    /// `directory/#inode (deleted)`).
    func openFiles(in directory: String) -> Int {
        let fds = "/proc/\(process.processIdentifier)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []
        return entries.filter { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\(entry)") else {
                return false
            }
            return target.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/")
        }.count
    }

    /// The value of the metric sample `name` (with its labels, as `/metrics` writes them), or nil when absent.
    func metric(_ name: String) -> Double? {
        guard let text = try? ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(adminPort)/metrics"]).stdout else {
            return nil
        }
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    var stdout: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }

    /// The access-log lines as dictionaries.
    var accessLog: [[String: Any]] {
        stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["msg"] as? String == "access" }
    }

    /// The access-log lines once there are at least `count` of them, waiting up to 2 s for the log writer (it writes
    /// in batches); fewer if they do not come.
    func accessLog(atLeast count: Int) async -> [[String: Any]] {
        for _ in 0..<100 {
            let lines = accessLog
            if lines.count >= count { return lines }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return accessLog
    }

    var url: String { "http://127.0.0.1:\(port)" }

    deinit { stop(timeout: 2) }
}

struct GatewayTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An upstream (our own server) that records every request it receives and answers by path:
/// `/slow?ms=N` sleeps then answers with a hit counter; `/status/N` answers N; `/stall` sends its head and 10 of the
/// 100 bytes it declares, then nothing; anything else echoes the request.
final class RecordingUpstream: Sendable {
    let server: HTTPServer
    var port: Int { server.localAddresses[0].port }

    static func start() async throws -> RecordingUpstream {
        let recorder = RequestRecorder()
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: group, handler: recorder)
        try await server.start()
        let upstream = RecordingUpstream(server: server, recorder: recorder)
        return upstream
    }

    private init(server: HTTPServer, recorder: RequestRecorder) {
        self.server = server
        self.recorderStorage = recorder
    }

    private let recorderStorage: RequestRecorder
    var requests: [RequestRecorder.Received] { recorderStorage.requests }
    /// The most `/slow` requests it was answering at once.
    var peakSlowInFlight: Int { recorderStorage.peakSlowInFlight }
    func reset() { recorderStorage.reset() }
}

/// Records requests and answers them (see ``RecordingUpstream``).
final class RequestRecorder: HTTPServerHandler {
    struct Received: Sendable {
        var head: HTTPRequestHead
        var body: [UInt8]
    }

    private let received = Locked<[Received]>([])
    private let slowInFlight = Locked((now: 0, peak: 0))
    var requests: [Received] { received.withLock { $0 } }
    var peakSlowInFlight: Int { slowInFlight.withLock { $0.peak } }
    func reset() { received.withLock { $0.removeAll() } }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let body = (try? await request.body.collect(upTo: 1 << 24)) ?? []
        let count = received.withLock { list -> Int in
            list.append(Received(head: request.head, body: body))
            return list.count
        }
        let path = String(request.head.path)
        if path.hasSuffix("/stall") {
            let stream = ByteStream()
            _ = stream.yield(Array("0123456789".utf8))
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 200, headers: ["Content-Length": "100"]), body: .stream(stream))
        }
        if path.hasSuffix("/slow") {
            let ms =
                Int(request.head.query?.split(separator: "&").first { $0.hasPrefix("ms=") }?.dropFirst(3) ?? "200")
                ?? 200
            slowInFlight.withLock { state in
                state.now += 1
                state.peak = max(state.peak, state.now)
            }
            try? await Task.sleep(for: .milliseconds(ms))
            slowInFlight.withLock { $0.now -= 1 }
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "application/json", "Connection": "X-Up-Hop", "X-Up-Hop": "1"],
                body: Array("{\"hit\":\(count)}".utf8))
        }
        if path.hasSuffix("/big") {
            // `mb` MiB of `x` after 300 ms.
            let mb =
                request.head.query?.split(separator: "&").first(where: { $0.hasPrefix("mb=") }).flatMap {
                    Int($0.dropFirst(3))
                } ?? 1
            try? await Task.sleep(for: .milliseconds(300))
            return HTTPServerResponse(status: 200, body: [UInt8](repeating: UInt8(ascii: "x"), count: mb << 20))
        }
        if path.hasSuffix("/private") {
            try? await Task.sleep(for: .milliseconds(300))
            return HTTPServerResponse(
                status: 200, headers: ["Set-Cookie": "session=cookie-canary-\(count)", "Cache-Control": "private"],
                body: Array("{\"hit\":\(count)}".utf8))
        }
        if let status = path.split(separator: "/").last.flatMap({ Int($0) }), path.contains("/status/") {
            if let ms = request.head.query?.split(separator: "&").first(where: { $0.hasPrefix("ms=") }).flatMap({
                Int($0.dropFirst(3))
            }) {
                try? await Task.sleep(for: .milliseconds(ms))
            }
            return HTTPServerResponse(status: status, body: Array("status \(status)".utf8))
        }
        var echo = "\(request.head.method) \(request.head.target)\n"
        for field in request.head.headers { echo += "\(field.name): \(field.value)\n" }
        echo += "\n" + String(decoding: body, as: UTF8.self)
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array(echo.utf8))
    }
}

/// The server an upstream fixture runs on: our own server on a free 127.0.0.1 port (TLS when configured), one loop.
/// Fixtures are their own handler, so the server is started after the fixture exists.
final class LoopbackServer: Sendable {
    private let server = Locked<HTTPServer?>(nil)

    /// The bound port (cleartext, else TLS); 0 before ``start(_:tls:)``.
    var port: Int {
        server.withLock { server in
            server.flatMap { ($0.localAddresses.first ?? $0.tlsLocalAddresses.first)?.port } ?? 0
        }
    }

    func start(
        _ handler: any HTTPServerHandler, tls: TLSServerConfiguration? = nil,
        limits: HTTPServerLimits = HTTPServerLimits()
    ) async throws {
        let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
        let server = HTTPServer(
            configuration: .init(
                listen: tls == nil ? [loopback] : [], tlsListen: tls == nil ? [] : [loopback],
                tls: tls, limits: limits),
            group: try EventLoopGroup(threads: 1), handler: handler)
        try await server.start()
        self.server.withLock { $0 = server }
    }

    func shutdown() async {
        await server.withLock { $0 }?.shutdown(timeout: .seconds(1))
    }
}
