import Foundation
import HTTPClientCore
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The safe retry (a reused connection that closes before any response byte, idempotent method) against a Python
/// server that answers the first request of every connection and closes the connection at the head of the second.
@Suite(.serialized) struct HTTPClientUploadRetryTests {
    static let script = """
        import socket, sys, threading
        port = int(sys.argv[1])
        lock = threading.Lock()
        heads = []
        def serve(conn):
            conn.settimeout(10)
            buffer = b""
            try:
                for served in range(2):
                    while b"\\r\\n\\r\\n" not in buffer and len(buffer) < 65536:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buffer += data
                    head, _, buffer = buffer.partition(b"\\r\\n\\r\\n")
                    lines = head.decode("latin-1").split("\\r\\n")
                    path = lines[0].split(" ")[1]
                    if path == "/heads":
                        with lock:
                            body = " ".join(heads).encode()
                        conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                        continue
                    with lock:
                        heads.append(path)
                    if served == 1:
                        return
                    length = 0
                    for line in lines[1:]:
                        name, _, value = line.partition(":")
                        if name.strip().lower() == "content-length":
                            length = int(value.strip())
                    while len(buffer) < length:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buffer += data
                    buffer = buffer[length:]
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
            except OSError:
                pass
            finally:
                conn.close()
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen(16)
        server.settimeout(60)
        for _ in range(200):
            try:
                conn, _ = server.accept()
            except OSError:
                break
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """

    @Test func aStreamBodyIsNeverRetriedButBytesAndFilesAre() async throws {
        guard let python = ProcessRunner.which("python3") else {
            Issue.record("python3 is missing")
            return
        }
        let directory = ProcessRunner.temporaryDirectory("upload-retry")
        try Self.script.write(toFile: "\(directory)/server.py", atomically: true, encoding: .utf8)
        let port = try freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["\(directory)/server.py", String(port)]
        try ChildProcess.launch(process)
        defer { ProcessRunner.stop(process) }
        for _ in 0..<100 {
            if (try? RawClient(port: port)) != nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let base = "http://127.0.0.1:\(port)"
        let client = HTTPClient()
        let filePath = "\(directory)/body.bin"
        try Data((0..<300_000).map { patternByte($0) }).write(to: URL(fileURLWithPath: filePath))

        _ = try await client.execute(HTTPClientRequest(url: "\(base)/warm-1"))
        let pulled = AtomicCounter()
        await #expect(throws: HTTPClientError.connectionClosed(responseStarted: false)) {
            _ = try await client.execute(
                HTTPClientRequest(
                    method: .put, url: "\(base)/stream",
                    body: .stream(patternStream(total: 200_000, pulled: pulled), length: 200_000)))
        }
        #expect(pulled.value > 0, "the stream was being sent when the connection closed")

        _ = try await client.execute(HTTPClientRequest(url: "\(base)/warm-2"))
        let bytes = try await client.execute(
            HTTPClientRequest(
                method: .put, url: "\(base)/bytes",
                body: .bytes([UInt8](repeating: 7, count: 200_000))))
        #expect(text(of: bytes) == "ok")
        // The retry left a connection that served one request: the file goes to it, and is sent again too.
        let file = try await client.execute(
            HTTPClientRequest(method: .put, url: "\(base)/file", body: .file(path: filePath)))
        #expect(text(of: file) == "ok")

        let heads = try await HTTPClient().execute(HTTPClientRequest(url: "\(base)/heads"))
        #expect(
            text(of: heads) == "/warm-1 /stream /warm-2 /bytes /bytes /file /file",
            "the stream went out once; bytes and file were sent again on a fresh connection")
    }
}
