#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import HTTPWire
import NetCore

/// A minimal server for benchmarks: `hello-server [--port N] [--threads N]` answers every request with a 200 and a
/// 13-byte body, the same work nginx does for `return 200 "Hello, World!"`.
@main
struct HelloServer {
    struct Hello: HTTPServerHandler {
        /// Built once, as nginx compiles `return 200 "..."` once: each request shares its storage.
        private let response = HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"],
                                                  body: Array("Hello, World!".utf8))

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            response
        }

        /// The answer is known up front: no task per request.
        func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse? {
            response
        }
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        func value(_ flag: String, default fallback: Int) -> Int {
            guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return fallback }
            return Int(arguments[index + 1]) ?? fallback
        }
        Socket.ignoreSIGPIPE()
        let group = try EventLoopGroup(threads: value("--threads", default: 1))
        let address = SocketAddress(numericHost: "127.0.0.1", port: value("--port", default: 8081))!
        let server = HTTPServer(configuration: .init(listen: [address]), group: group, handler: Hello())
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
