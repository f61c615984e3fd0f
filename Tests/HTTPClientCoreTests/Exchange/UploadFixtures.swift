import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import Synchronization

/// Byte `offset` of every test upload body.
func patternByte(_ offset: Int) -> UInt8 { UInt8(offset % 251) }

/// A test upload body: `total` pattern bytes in `chunk`-sized pieces, made only when the client asks for the next one
/// (`AsyncThrowingStream(unfolding:)`), so `pulled` is what the client has taken from its producer. With `failAfter`
/// the stream throws ``UploadBoom`` once that many bytes were pulled.
func patternStream(
    total: Int, chunk: Int = 64 * 1024, pulled: AtomicCounter,
    failAfter: Int? = nil
) -> AsyncThrowingStream<[UInt8], any Error> {
    // Every chunk is a slice of this template starting at `offset % 251`.
    let template = (0..<(chunk + 251)).map { patternByte($0) }
    return AsyncThrowingStream(unfolding: {
        let offset = pulled.value
        if let failAfter, offset >= failAfter { throw UploadBoom() }
        guard offset < total else { return nil }
        let count = min(chunk, total - offset)
        pulled.add(count)
        let start = offset % 251
        return Array(template[start..<(start + count)])
    })
}

struct UploadBoom: Error {}

/// Opens once; everyone waiting, and everyone who comes later, goes on.
final class UploadGate: Sendable {
    private let state = Locked<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state -> Bool in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// Progress events as they came.
final class ProgressLog: Sendable {
    private let events = Locked<[(completed: Int64, total: Int64?)]>([])

    var progress: HTTPClientProgress {
        HTTPClientProgress(upload: { completed, total in self.events.withLock { $0.append((completed, total)) } })
    }

    var all: [(completed: Int64, total: Int64?)] { events.withLock { $0 } }
    var lastCompleted: Int64 { events.withLock { $0.last?.completed ?? 0 } }
}

/// Routes for the upload tests:
/// - `/count`: reads the whole body and answers `<bytes> <pattern ok|bad> <framing>` (`length N`, `chunked` or
///   `none`, from the request head; HTTP/2 has no chunked framing, so it shows `none` there).
/// - `/stall`: waits for `gate`, then reads like `/count` (checking the pattern at the edges of each piece only).
/// - `/reject`: answers 413 at once, never reading the body.
/// - `/hello`: a small answer; `/slow?ms=N`: answers after N ms.
struct UploadRoutes: HTTPServerHandler {
    let gate: UploadGate

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        switch String(request.head.path) {
        case "/count":
            return await count(request, everyByte: true)
        case "/stall":
            await gate.wait()
            return await count(request, everyByte: false)
        case "/reject":
            return HTTPServerResponse(status: 413, body: Array("too large".utf8))
        case "/slow":
            let ms = Int(request.head.query?.split(separator: "=").last ?? "100") ?? 100
            try? await Task.sleep(for: .milliseconds(ms))
            return HTTPServerResponse(status: 200, body: Array("slow".utf8))
        default:
            return HTTPServerResponse(status: 200, body: Array("hello".utf8))
        }
    }

    private func count(_ request: HTTPServerRequest, everyByte: Bool) async -> HTTPServerResponse {
        var received = 0
        var intact = true
        do {
            for try await piece in request.body {
                if everyByte {
                    for (index, byte) in piece.enumerated() where byte != patternByte(received + index) {
                        intact = false
                    }
                } else if piece.first != patternByte(received) || piece.last != patternByte(received + piece.count - 1)
                {
                    intact = false
                }
                received += piece.count
            }
        } catch {
            return HTTPServerResponse(status: 400, body: Array("body failed after \(received)".utf8))
        }
        let headers = request.head.headers
        let framing =
            headers.first(name: "Content-Length").map { "length \($0)" }
            ?? (headers.contains(name: "Transfer-Encoding") ? "chunked" : "none")
        return HTTPServerResponse(status: 200, body: Array("\(received) \(intact ? "ok" : "bad") \(framing)".utf8))
    }
}

/// A loopback server with ``UploadRoutes`` (HTTP/1.1 and h2c), bodies up to 1 GiB unless `maxBodyBytes` says less.
func startUploadServer(
    gate: UploadGate = UploadGate(), maxBodyBytes: Int64 = 1 << 30,
    http2Settings: HTTP2Settings = HTTP2Settings()
) async throws -> (HTTPServer, String) {
    var limits = HTTPServerLimits()
    limits.maxBodyBytes = maxBodyBytes
    let server = HTTPServer(
        configuration: .init(
            listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
            limits: limits, http2Settings: http2Settings),
        group: try EventLoopGroup(threads: 1), handler: UploadRoutes(gate: gate))
    try await server.start()
    return (server, "http://127.0.0.1:\(server.localAddresses[0].port)")
}

func uploadClient(
    _ mode: HTTPClient.Configuration.HTTP2Mode,
    _ configure: (inout HTTPClient.Configuration) -> Void = { _ in }
) -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.http2 = mode
    configure(&configuration)
    return HTTPClient(configuration: configuration)
}

func text(of response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }
