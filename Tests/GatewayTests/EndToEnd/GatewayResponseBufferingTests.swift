import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Response buffering (`server.buffering`, issue #37) through the real binary, in front of nginx serving files: stalled
/// downloads no longer hold the upstream's connections, what must not be buffered is not, the caps hold, and the
/// temporary files go with their responses, with a crash, and at start-up.
@Suite(.serialized) struct GatewayResponseBufferingTests {
    static let faults = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("faults")
    static let bigBytes = 20 << 20

    /// nginx serving `big.bin` (20 MiB of 8-byte big-endian offsets, so order and completeness can be checked),
    /// `small.txt`, and `big.bin`'s bytes as `sse.bin` (`text/event-stream`), `noaccel.bin` (`X-Accel-Buffering: no`)
    /// and `yes.bin` (`X-Accel-Buffering: yes`).
    final class FileUpstream {
        let process = Process()
        let port: Int
        let prefix: String
        let big: Data

        init() async throws {
            guard let nginx = ProcessRunner.which("nginx") else { throw NginxMissing() }
            prefix = ProcessRunner.temporaryDirectory("gateway-buffering-files")
            port = try freeLoopbackPort()
            let www = "\(prefix)/www"
            try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: "\(prefix)/logs", withIntermediateDirectories: true)
            var bytes = [UInt8](repeating: 0, count: GatewayResponseBufferingTests.bigBytes)
            for offset in stride(from: 0, to: bytes.count, by: 8) {
                withUnsafeBytes(of: UInt64(offset).bigEndian) { bytes.replaceSubrange(offset..<offset + 8, with: $0) }
            }
            big = Data(bytes)
            try big.write(to: URL(fileURLWithPath: "\(www)/big.bin"))
            for name in ["sse.bin", "noaccel.bin", "yes.bin"] {
                try FileManager.default.linkItem(atPath: "\(www)/big.bin", toPath: "\(www)/\(name)")
            }
            try "ok".write(toFile: "\(www)/small.txt", atomically: true, encoding: .utf8)
            let config = """
                worker_processes 1;
                pid \(prefix)/nginx.pid;
                error_log \(prefix)/logs/error.log;
                events { worker_connections 1024; }
                http {
                    access_log off;
                    sendfile on;
                    keepalive_requests 1000000;
                    keepalive_timeout 120s;
                    client_body_temp_path \(prefix)/body; proxy_temp_path \(prefix)/proxy;
                    fastcgi_temp_path \(prefix)/fcgi; uwsgi_temp_path \(prefix)/uwsgi; scgi_temp_path \(prefix)/scgi;
                    server {
                        listen 127.0.0.1:\(port) backlog=1024;
                        root \(www);
                        location = /sse.bin { types { } default_type text/event-stream; }
                        location = /noaccel.bin { add_header X-Accel-Buffering no; }
                        location = /yes.bin { add_header X-Accel-Buffering yes; }
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
            throw NginxMissing()
        }

        func stop() {
            ProcessRunner.stop(process, signal: SIGQUIT, timeout: 5)
            try? FileManager.default.removeItem(atPath: prefix)
        }
    }

    struct NginxMissing: Error {}

    /// The gateway's configuration: `/f` buffered (the default), `/raw` with `buffering: false`; callers named by
    /// `X-Forwarded-For` from 127.0.0.1.
    static func config(
        upstreamPort: Int, temporary: String, buffering: String = "", pool: String = "",
        threads: Int = 1
    ) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: \(threads)
          trusted_proxies: [127.0.0.1]
          buffering: { temp_dir: \(temporary)\(buffering) }
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { access_log: false }
        upstreams:
          files: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 30s }\(pool) }
        routes:
          - { name: f, match: { path_prefix: /f }, upstream: files, rewrite: { strip_prefix: /f } }
          - { name: raw, match: { path_prefix: /raw }, upstream: files, rewrite: { strip_prefix: /raw }, buffering: false }
        """
    }

    /// A client that asks for `path` and reads nothing (until the test says so); with `close`, the answer ends the
    /// connection.
    static func stalled(_ port: Int, _ path: String, caller: String = "203.0.113.66", close: Bool = false) throws
        -> RawClient
    {
        let client = try RawClient(port: port)
        client.send(
            "GET \(path) HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: \(caller)\r\n"
                + (close ? "Connection: close\r\n" : "") + "\r\n")
        return client
    }

    /// Waits (bounded) until `condition` holds.
    static func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return condition()
    }

    /// Issue #37's done-when: 70 HTTP/1.1 clients that ask for a 20 MB answer and never read it, and 70 HTTP/2
    /// streams with a zero window from 7 connections, against one upstream whose pool holds 64 connections; other
    /// callers are then answered 200, each well within the pool's 10 s wait (with buffering the stalled answers are
    /// read into temporary files and their connections go back to the pool at once). With `buffering: false` (the
    /// control, with a 2 s wait) the stalled clients hold every connection and the others get 503. Afterwards no
    /// temporary file is left open and the gauges are back at zero.
    @Test(arguments: [true, false])
    func stalledDownloadsLeaveTheUpstreamToOthers(buffering: Bool) async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffers")
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port, temporary: temporary, buffering: ", max_temp_total: 4GiB",
                pool: buffering ? ", pool: { max_connections: 64 }" : ", pool: { max_connections: 64, max_wait: 2s }",
                threads: 2))
        let path = buffering ? "/f/big.bin" : "/raw/big.bin"
        var http1 = try (0..<70).map { _ in try Self.stalled(gateway.port, path) }
        let ready = "\(temporary)-h2.json"
        let http2 = Process()
        http2.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        http2.arguments = [
            Self.faults.appendingPathComponent("h2_stalled_downloads.py").path, String(gateway.port), path,
            "--connections", "7", "--streams", "10", "--header", "x-forwarded-for:203.0.113.67",
            "--heads-within", "30", "--ready", ready, "--hold", "90"
        ]
        try ChildProcess.launch(http2)
        defer { ProcessRunner.stop(http2) }
        #expect(
            try await Self.eventually(35) { FileManager.default.fileExists(atPath: ready) },
            "the HTTP/2 streams got their heads")
        let heads =
            (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: ready)))) as? [String: Any]
        #expect(heads?["heads"] as? Int == 70, "\(String(describing: heads))")
        try await Task.sleep(for: .milliseconds(500))

        // Other callers of the same upstream, five at once.
        let url = "\(gateway.url)\(buffering ? "/f" : "/raw")/small.txt"
        let probes = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    try await offPool {
                        try ProcessRunner.run(
                            "curl",
                            [
                                "-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                                "-H", "X-Forwarded-For: 198.51.100.7", url
                            ], timeout: 30
                        ).stdout
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let answers = probes.map { $0.split(separator: " ") }
        let statuses = answers.map { $0.first.map(String.init) ?? "" }
        let times = answers.compactMap { $0.last.flatMap { Double($0) } }
        if buffering {
            #expect(statuses == Array(repeating: "200", count: 5), "\(probes)")
            #expect(times.allSatisfy { $0 < 5 }, "each answered well within the 10 s pool wait: \(probes)")
            // More than the pool holds went on in temporary files: connections were given back and taken again
            // (all 140 do in time; how soon depends on the machine's load).
            #expect(
                try await Self.eventually(30) {
                    (gateway.metric("moya_gateway_response_buffer_spilled_total") ?? 0) > 64
                },
                "\(String(describing: gateway.metric("moya_gateway_response_buffer_spilled_total"))) spilled")
        } else {
            #expect(statuses == Array(repeating: "503", count: 5), "the control: the pool is held, \(probes)")
            #expect(gateway.metric("moya_gateway_response_buffer_spilled_total") == 0)
        }

        // The stalled clients go: their temporary files close, the gauges come back to zero.
        for client in http1 { client.resetOnClose() }
        http1.removeAll()
        ProcessRunner.stop(http2)
        #expect(
            try await Self.eventually(10) { gateway.openFiles(in: temporary) == 0 },
            "temporary files still open: \(gateway.openFiles(in: temporary))")
        #expect(
            try await Self.eventually(5) {
                gateway.metric("moya_gateway_response_buffer_bytes{where=\"disk\"}") == 0
                    && gateway.metric("moya_gateway_response_buffer_bytes{where=\"memory\"}") == 0
            }, "disk \(String(describing: gateway.metric("moya_gateway_response_buffer_bytes{where=\"disk\"}")))")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary)) == [], "no file was ever named there")
        let after = try ProcessRunner.run("curl", ["-sS", "-H", "X-Forwarded-For: 198.51.100.7", url])
        #expect(after.stdout == "ok")
        #expect(gateway.stop() == 0)
    }

    /// Past `max_temp_file_size` (one response's file) or `max_temp_total` (all files), the rest of a response goes
    /// at its client's pace, counted by cause; the bodies still arrive whole and in order.
    @Test func theRestGoesAtTheClientsPacePastACap() async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffer-caps")
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port, temporary: temporary,
                buffering: ", memory: 64KiB, max_temp_file_size: 2MiB, max_temp_total: 3MiB"))
        let first = try Self.stalled(gateway.port, "/f/big.bin", close: true)
        #expect(
            try await Self.eventually {
                gateway.metric("moya_gateway_response_buffer_overflows_total{cause=\"max_temp_file_size\"}") == 1
            })
        let second = try Self.stalled(gateway.port, "/f/big.bin", close: true)
        #expect(
            try await Self.eventually {
                gateway.metric("moya_gateway_response_buffer_overflows_total{cause=\"max_temp_total\"}") == 1
            })
        let disk = gateway.metric("moya_gateway_response_buffer_bytes{where=\"disk\"}") ?? -1
        #expect(disk > 0 && disk <= Double(3 << 20), "\(disk)")
        // Now both read: every byte, in order, after the head.
        let bodies = try await offPool { [first, second] in [first, second].map { $0.readAll(timeout: 10).bytes } }
        for bytes in bodies {
            let text = bytes.firstRange(of: Array("\r\n\r\n".utf8))
            let body = text.map { Data(bytes[$0.upperBound...]) } ?? Data()
            #expect(body.count == Self.bigBytes, "\(body.count)")
            #expect(body == upstream.big, "the body arrived whole and in order")
        }
        #expect(try await Self.eventually { gateway.openFiles(in: temporary) == 0 })
        #expect(gateway.metric("moya_gateway_response_buffer_bytes{where=\"disk\"}") == 0)
        #expect(gateway.stop() == 0)
    }

    /// A client that reads in bursts, with pauses that let the gateway fall behind into the file and catch up again
    /// (the file emptied, chunks straight to the client, then the file again), gets every byte in order, over
    /// HTTP/1.1 and h2c.
    @Test func aClientReadingInBurstsGetsEveryByteInOrder() async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffer-bursts")
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port, temporary: temporary,
                buffering: ", memory: 64KiB"))
        let client = try Self.stalled(gateway.port, "/f/big.bin", close: true)
        let received = try await offPool { () -> [UInt8] in
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            var sincePause = 0
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                bytes.append(contentsOf: buffer[0..<count])
                sincePause += count
                if sincePause >= 1 << 20 {
                    sincePause = 0
                    usleep(60_000)
                }
            }
            return bytes
        }
        let head = try #require(received.firstRange(of: Array("\r\n\r\n".utf8)))
        let body = Data(received[head.upperBound...])
        #expect(body.count == Self.bigBytes)
        #expect(body == upstream.big, "every byte, in order")
        #expect((gateway.metric("moya_gateway_response_buffer_spilled_total") ?? 0) >= 1, "it went through the file")
        let h2 = try ProcessRunner.run(
            "sh",
            [
                "-c",
                "curl -sS --http2-prior-knowledge --limit-rate 20M '\(gateway.url)/f/big.bin' | cmp - '\(upstream.prefix)/www/big.bin' && echo same"
            ], timeout: 60)
        #expect(h2.stdout.contains("same"), "\(h2.stdout) \(h2.stderr)")
        #expect(try await Self.eventually { gateway.openFiles(in: temporary) == 0 })
        #expect(gateway.stop() == 0)
    }

    /// Whether a small tmpfs can be mounted here (root, and mounts allowed): for the full-disk case.
    static let canMountTmpfs: Bool = {
        guard geteuid() == 0 else { return false }
        let probe = ProcessRunner.temporaryDirectory("gateway-tmpfs-probe")
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard (try? ProcessRunner.run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]))?.status == 0 else {
            return false
        }
        _ = try? ProcessRunner.run("umount", [probe])
        return true
    }()

    /// A temporary directory that fills up (a 1 MiB tmpfs): the write that fails stops buffering for that response
    /// (`temp_file_error`, a warning with the reason and no file name), its rest goes at the client's pace, and the
    /// body still arrives whole and in order.
    @Test(.enabled(if: canMountTmpfs, "needs root and tmpfs mounts"))
    func aFullTemporaryDirectoryStopsBufferingNotTheResponse() async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffer-full")
        #expect(try ProcessRunner.run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", temporary]).status == 0)
        defer { _ = try? ProcessRunner.run("umount", ["-l", temporary]) }
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port, temporary: temporary,
                buffering: ", memory: 64KiB"
            )
            .replacingOccurrences(of: "logging: { access_log: false }", with: "logging: { access_log: true }"))
        let client = try Self.stalled(gateway.port, "/f/big.bin", close: true)
        #expect(
            try await Self.eventually {
                gateway.metric("moya_gateway_response_buffer_overflows_total{cause=\"temp_file_error\"}") == 1
            })
        let received = try await offPool { client.readAll(timeout: 10).bytes }
        let head = try #require(received.firstRange(of: Array("\r\n\r\n".utf8)))
        #expect(Data(received[head.upperBound...]) == upstream.big, "every byte, in order")
        #expect(try await Self.eventually { gateway.openFiles(in: temporary) == 0 })
        #expect(gateway.metric("moya_gateway_response_buffer_bytes{where=\"disk\"}") == 0)
        #expect(gateway.stop() == 0)
        let warnings = gateway.stdout.split(separator: "\n").filter {
            $0.contains("cannot buffer a response in a temporary file")
        }
        #expect(warnings.count == 1, "\(gateway.stdout.suffix(2000))")
        #expect(warnings.first?.contains("No space left on device") == true, "\(warnings)")
        #expect(
            !gateway.stdout.contains(temporary) && !gateway.stdout.contains("moya-gateway-buffer-"), "no file is named")
    }

    /// Not buffered: a route's `buffering: false`, a `text/event-stream` answer and one with `X-Accel-Buffering: no`;
    /// `X-Accel-Buffering: yes` buffers even on a `buffering: false` route. The header never reaches the client.
    @Test func whatIsNotBufferedIsNot() async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffer-modes")
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port, temporary: temporary))
        let cases: [(path: String, buffered: Bool)] = [
            ("/f/sse.bin", false), ("/f/noaccel.bin", false), ("/raw/big.bin", false), ("/raw/yes.bin", true),
            ("/f/big.bin", true)
        ]
        for (path, buffered) in cases {
            let before = gateway.metric("moya_gateway_response_buffer_spilled_total") ?? -1
            let client = try Self.stalled(gateway.port, path)
            let head = client.read(until: { $0.contains("\r\n\r\n") }, timeout: 5).lowercased()
            #expect(head.hasPrefix("http/1.1 200"), "\(path): \(head)")
            #expect(!head.contains("x-accel-buffering"), "\(path): the header stays behind")
            if path.hasPrefix("/f/sse") { #expect(head.contains("content-type: text/event-stream"), "\(head)") }
            let spilled = try await Self.eventually(1) {
                (gateway.metric("moya_gateway_response_buffer_spilled_total") ?? -1) > before
            }
            #expect(spilled == buffered, "\(path): buffered \(spilled)")
            client.resetOnClose()
        }
        #expect(try await Self.eventually { gateway.openFiles(in: temporary) == 0 })
        #expect(gateway.stop() == 0)
    }

    /// A crash (SIGKILL) in the middle of buffered downloads leaves nothing in the directory (the files never had a
    /// name there), and a start removes what a crash could have left under the gateway's own name (other files stay).
    @Test func aCrashLeavesNothingAndAStartSweeps() async throws {
        let upstream = try await FileUpstream()
        defer { upstream.stop() }
        let temporary = ProcessRunner.temporaryDirectory("gateway-buffer-crash")
        try "left".write(toFile: "\(temporary)/moya-gateway-buffer-Ab12Cd", atomically: false, encoding: .utf8)
        try "mine".write(toFile: "\(temporary)/keep.txt", atomically: false, encoding: .utf8)
        let config = Self.config(upstreamPort: upstream.port, temporary: temporary)
        let gateway = try await GatewayProcess(config: config)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary)) == ["keep.txt"], "swept at start")
        let clients = try (0..<3).map { _ in try Self.stalled(gateway.port, "/f/big.bin") }
        #expect(
            try await Self.eventually { gateway.openFiles(in: temporary) == 3 }, "\(gateway.openFiles(in: temporary))")
        kill(gateway.process.processIdentifier, SIGKILL)
        _ = ProcessRunner.waitForExit(gateway.process, timeout: 10)
        _ = clients
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: temporary)) == ["keep.txt"],
            "nothing left by the crash")
        // Another leftover under the gateway's name, and a restart.
        try "left".write(toFile: "\(temporary)/moya-gateway-buffer-Zz9Yy8", atomically: false, encoding: .utf8)
        let restarted = try await GatewayProcess(config: config)
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: temporary)) == ["keep.txt"], "swept at the restart")
        let answer = try ProcessRunner.run("curl", ["-sS", "\(restarted.url)/f/small.txt"])
        #expect(answer.stdout == "ok")
        #expect(restarted.stop() == 0)
    }

    /// A temporary directory where no file can be made is a configuration error, for `check` and `serve` alike,
    /// with the file, line, key and reason.
    @Test func anUnusableTemporaryDirectoryStopsTheStart() throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-buffer-baddir")
        let file = "\(directory)/gateway.yaml"
        try """
        server:
          listen: ["127.0.0.1:0"]
          buffering:
            temp_dir: /nonexistent-moya-gateway-buffers
        admin: { listen: "127.0.0.1:0" }
        upstreams:
          a: { base_url: "http://127.0.0.1:9" }
        routes:
          - { name: r, match: { path_prefix: / }, upstream: a }
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let expected =
            "\(file):4: server.buffering.temp_dir: No such file or directory: /nonexistent-moya-gateway-buffers"
        let check = try CheckCommandTests.run(["check", "--config", file])
        #expect(check.status == 1)
        #expect(check.stderr.contains(expected), "\(check.stderr)")
        let started = ContinuousClock.now
        let serve = try CheckCommandTests.run(["serve", "--config", file])
        #expect(serve.status == 1)
        #expect(serve.stderr.contains(expected), "\(serve.stderr)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
