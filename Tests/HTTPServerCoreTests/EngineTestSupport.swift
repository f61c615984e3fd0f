import Foundation
import NetCore
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What our own TLS client (a NetCore ``Connection``) saw in one `GET /hello` exchange.
struct TLSExchange: Sendable {
    var peer: TLSPeerCertificate?
    var alpn: String?
    var response = ""
    var error: String?

    var served: Bool { response.hasPrefix("HTTP/1.1 200") && response.hasSuffix("hello") }
}

/// Drives one client connection: sends `GET /hello` once active, collects the response until the server closes.
private final class TLSExchangeDelegate: ConnectionDelegate {
    private var exchange = TLSExchange()
    private var keepAlive: TLSExchangeDelegate?
    private var timer: LoopTimer?
    private let done: (TLSExchange) -> Void

    init(done: @escaping (TLSExchange) -> Void) {
        self.done = done
        keepAlive = self
    }

    func start(_ connection: Connection) throws {
        timer = connection.loop.schedule(after: .seconds(10)) { connection.close(error: TLSError("test timeout")) }
        connection.delegate = self
        try connection.start()
    }

    func connectionDidBecomeActive(_ connection: Connection) {
        exchange.peer = connection.peerCertificate
        exchange.alpn = connection.negotiatedProtocol
        connection.write(Array("GET /hello HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".utf8))
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        exchange.response += String(decoding: bytes, as: UTF8.self)
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        exchange.error = error.map { "\($0)" }
        timer?.cancel()
        keepAlive = nil
        done(exchange)
    }
}

/// One HTTPS `GET /hello` to `127.0.0.1:port` with our client, SNI `serverName` (none when nil).
func tlsExchange(port: Int, serverName: String?, client: TLSClientConfiguration, loop: EventLoop) async throws
    -> TLSExchange
{
    let context = try TLSContext(client: client)
    return try await withCheckedThrowingContinuation { continuation in
        loop.execute {
            do {
                let address = SocketAddress(numericHost: "127.0.0.1", port: port)!
                let connection = try Connection(connectingTo: address, loop: loop, tls: context, serverName: serverName)
                let delegate = TLSExchangeDelegate { continuation.resume(returning: $0) }
                try delegate.start(connection)
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// `hello-server` (the built product) started through `sh -c` (optionally under `ulimit -n`), output to a file.
final class HelloServerProcess {
    let process = Process()
    let port: Int
    let logPath: String

    init(port: Int, fileLimit: Int? = nil) throws {
        guard let binary = BuiltProducts.executable(named: "hello-server") else {
            throw TLSError("hello-server is not built (swift build --build-tests builds it)")
        }
        self.port = port
        logPath = ProcessRunner.temporaryDirectory("hello-server") + "/output.log"
        let limit = fileLimit.map { "ulimit -n \($0) && " } ?? ""
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "\(limit)exec \"$0\" --port \"$1\" --threads 1 >\"$2\" 2>&1", binary.path, String(port), logPath
        ]
        process.standardInput = nil
        try ChildProcess.launch(process)
    }

    var pid: Int32 { process.processIdentifier }
    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits (bounded) until a request is answered; false when it never was.
    func waitUntilServing() async throws -> Bool {
        for _ in 0..<100 {
            if try await offPool({ [port] in HelloServerProcess.get(port: port, timeout: 0.5) }) { return true }
            if !process.isRunning { return false }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits (bounded) for the process to exit; its status, or nil while still running.
    func waitForExit(seconds: Double) async throws -> Int32? {
        for _ in 0..<Int(seconds * 20) {
            if !process.isRunning { return process.terminationStatus }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// User plus system CPU time used so far, in seconds (`/proc/PID/stat` fields 14 and 15).
    static func cpuSeconds(pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        guard let close = stat.lastIndex(of: ")") else { throw TLSError("unreadable /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw TLSError("unreadable /proc/\(pid)/stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// One `GET /` on a fresh connection: whether a 200 came back within `timeout`.
    static func get(port: Int, timeout: Double) -> Bool {
        guard let client = try? RawClient(port: port) else { return false }
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        return client.read(until: { $0.contains("Hello, World!") }, timeout: timeout).hasPrefix("HTTP/1.1 200")
    }

    func stop() {
        ProcessRunner.stop(process)
    }

    deinit { stop() }
}
