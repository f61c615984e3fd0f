import HTTPClientCore
import Logging
import Moya
import NetCore

/// How the handler uses an upstream's ``CircuitBreaker``: what a call's result says about the upstream, the answer
/// to a refused call, and the log lines and metrics of a change.
enum UpstreamCircuit {
    /// What `result` says about the upstream's health. A cancelled call (the client left) or one the gateway could
    /// not send for its own reasons (pool full, body refused) says nothing.
    static func outcome(of result: Result<Moya.Response, MoyaError>, cancelled: Bool) -> CircuitBreaker.Outcome {
        if cancelled { return .neutral }
        switch result {
        case .success(let response):
            return isFailureStatus(response.statusCode) ? .failure : .success
        case .failure(let error):
            if let response = error.response { return isFailureStatus(response.statusCode) ? .failure : .success }
            switch GatewayErrorMapping.code(for: error) {
            case .badGateway, .gatewayTimeout: return .failure
            default: return .neutral
            }
        }
    }

    /// ``outcome(of:cancelled:)`` for the client's response as it came (see `MoyaLoopCompletion`).
    static func outcome(
        ofExchanged result: borrowing Result<HTTPClientResponseOrStream, MoyaError>, cancelled: Bool
    ) -> CircuitBreaker.Outcome {
        switch result {
        case .success(let response):
            return cancelled ? .neutral : isFailureStatus(response.status) ? .failure : .success
        case .failure(let error):
            return outcome(of: .failure(error), cancelled: cancelled)
        }
    }

    /// 502, 503 and 504 from the upstream: it (or what is behind it) cannot answer.
    static func isFailureStatus(_ status: Int) -> Bool { (502...504).contains(status) }

    /// Logs and exports a change of `upstream`'s circuit.
    static func report(
        _ transition: CircuitBreaker.Transition, upstream: String, breaker: CircuitBreaker,
        snapshot: GatewaySnapshot
    ) {
        let metadata: Logger.Metadata = [
            "upstream": "\(upstream)", "failures": "\(breaker.failureThreshold)",
            "open_for": "\(breaker.openFor)"
        ]
        switch transition {
        case .none:
            return
        case .opened:
            snapshot.logger.warning("upstream circuit opened: calls are refused with 503", metadata: metadata)
        case .reopened:
            snapshot.logger.warning("upstream circuit stays open: the trial call failed", metadata: metadata)
        case .closed:
            snapshot.logger.notice("upstream circuit closed: the trial call succeeded", metadata: metadata)
        }
        snapshot.telemetry.circuit(upstream: upstream, isOpen: transition != .closed)
    }
}
