import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore

#if canImport(Glibc)
import Glibc
#endif

/// A minimal server for benchmarks: `hello-server [--port N] [--threads N] [--no-io-uring]` answers every request with a
/// 200 and a 13-byte body, the same work nginx does for `return 200 "Hello, World!"`. With `--proxy URL` it relays every
/// request to `URL`'s origin instead, through `HTTPClient` and nothing else: the engine's own cost of proxying, the
/// floor under what `Moya` and the gateway add (`Benchmarks/layers.sh`).
@main
struct HelloServer {
    struct Hello: HTTPServerHandler {
        /// Built once, as nginx compiles `return 200 "..."` once: each request shares its storage.
        private let response = HTTPServerResponse(
            status: 200, headers: ["Content-Type": "text/plain"],
            body: Array("Hello, World!".utf8))

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            response
        }

        /// The answer is known up front: no task per request.
        func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse? {
            response
        }
    }

    /// Relays each request to one origin with the engine alone: no routing, plugins or logs, only the hop-by-hop
    /// fields dropped both ways.
    struct Relay: HTTPServerHandler {
        let client: HTTPClient
        let origin: HTTPOrigin

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            guard let response = try? await client.execute(outgoing(for: request)) else {
                return HTTPServerResponse(status: 502, body: [])
            }
            return Self.answer(response)
        }

        /// Every request is relayed on the loop, by callback, with no task (``start(_:context:responder:)``).
        func decide(_ request: HTTPServerRequest) -> HTTPServerDecision {
            .answerLater(context: nil)
        }

        func start(
            _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
        ) {
            let started = client.start(outgoing(for: request)) { result in
                guard case .success(.collected(let response)) = result else {
                    return responder.respond(HTTPServerResponse(status: 502, body: []))
                }
                responder.respond(Self.answer(response))
            }
            guard let started else {
                // Not startable at once (the origin's address not resolved yet): in a task, as `handle` does.
                return answerInTask(request, context: context, responder: responder)
            }
            responder.cancellation = RelayCancellation(call: started)
        }

        private func outgoing(for request: HTTPServerRequest) -> HTTPClientRequest {
            HTTPClientRequest(
                method: request.head.method, origin: origin, target: request.head.target,
                headers: Self.endToEnd(request.head.headers, dropping: "Host"))
        }

        private static func answer(_ response: HTTPClientResponse) -> HTTPServerResponse {
            HTTPServerResponse(status: response.status, headers: Self.endToEnd(response.headers), body: response.body)
        }

        /// `headers` without the fields dropped both ways (`Connection`, `Keep-Alive`, `Transfer-Encoding`,
        /// `Content-Length`, `TE`, `Trailer`, `Upgrade`, `Proxy-Connection`: the body's framing is the server's and the
        /// client's own) and `extra`, compared by token and copied as bytes.
        private static func endToEnd(_ headers: HTTPFields, dropping extra: String = "") -> HTTPFields {
            var kept = HTTPFields()
            kept.reserveCapacity(headers.count)
            for index in 0..<headers.count {
                switch headers.token(at: index) {
                case .connection, .keepAlive, .transferEncoding, .contentLength, .te, .trailer, .upgrade,
                    .proxyConnection:
                    continue
                default:
                    if !extra.isEmpty
                        && headers.withField(at: index, { name, _ in extra.equalsIgnoringASCIICase(name) })
                    {
                        continue
                    }
                    kept.add(fieldAt: index, of: headers)
                }
            }
            return kept
        }
    }

    /// Stops a relayed exchange whose client went away.
    final class RelayCancellation: HTTPServerCancellation {
        let call: HTTPClientCall
        init(call: HTTPClientCall) { self.call = call }
        func cancel() { call.cancel() }
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        func value(_ flag: String, default fallback: Int) -> Int {
            guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return fallback }
            return Int(arguments[index + 1]) ?? fallback
        }
        Socket.ignoreSIGPIPE()
        let group = try EventLoopGroup(
            threads: value("--threads", default: 1),
            batchedSends: !arguments.contains("--no-io-uring"))
        let address = SocketAddress(numericHost: "127.0.0.1", port: value("--port", default: 8081))!
        let handler: any HTTPServerHandler
        if let index = arguments.firstIndex(of: "--proxy"), index + 1 < arguments.count {
            guard let url = try? HTTPClientRequest(url: arguments[index + 1]),
                ["127.0.0.1", "::1", "localhost"].contains(url.host)
            else {
                let message = Array("hello-server: --proxy takes a loopback http URL\n".utf8)
                _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
                exit(2)
            }
            var configuration = HTTPClient.Configuration()
            configuration.maxConnectionsPerOrigin = 64
            handler = Relay(client: HTTPClient(configuration: configuration, group: group), origin: url.origin)
        } else {
            handler = Hello()
        }
        let server = HTTPServer(configuration: .init(listen: [address]), group: group, handler: handler)
        do {
            try await server.start()
        } catch {
            let message = Array("hello-server: cannot listen on \(address): \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(1)
        }
        print("hello-server listening on \(server.localAddresses.map(\.description).joined(separator: ", "))")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
