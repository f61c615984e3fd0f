import HTTPServerCore
import HTTPWire
import Synchronization

/// The admin listener: `/healthz` (the process runs), `/readyz` (config loaded, listeners open, not draining) and
/// `/metrics` (Prometheus text format).
final class AdminHandler: HTTPServerHandler {
    private let telemetry: Telemetry
    private let readiness: Atomic<Bool>
    private let openConnections: @Sendable () -> Int

    init(telemetry: Telemetry, openConnections: @escaping @Sendable () -> Int) {
        self.telemetry = telemetry
        self.readiness = Atomic(false)
        self.openConnections = openConnections
    }

    func setReady(_ ready: Bool) { readiness.store(ready, ordering: .releasing) }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        answer(request)
    }

    /// Every admin answer is computed at once: no task per probe or scrape.
    func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse? {
        answer(request)
    }

    private func answer(_ request: HTTPServerRequest) -> HTTPServerResponse {
        guard request.head.method == .get || request.head.method == .head else {
            return HTTPServerResponse(
                status: 405, headers: ["Allow": "GET, HEAD", "Content-Type": "application/json"],
                body: Array("{\"error\":\"method_not_allowed\"}".utf8))
        }
        switch String(request.head.path) {
        case "/healthz":
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: Array("{\"status\":\"ok\"}".utf8))
        case "/readyz":
            let ready = readiness.load(ordering: .acquiring)
            return HTTPServerResponse(
                status: ready ? 200 : 503, headers: ["Content-Type": "application/json"],
                body: Array((ready ? "{\"status\":\"ready\"}" : "{\"status\":\"draining\"}").utf8))
        case "/metrics":
            telemetry.openConnections(openConnections())
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"],
                body: telemetry.exposition())
        default:
            return HTTPServerResponse(
                status: 404, headers: ["Content-Type": "application/json"],
                body: Array("{\"error\":\"not_found\"}".utf8))
        }
    }
}
