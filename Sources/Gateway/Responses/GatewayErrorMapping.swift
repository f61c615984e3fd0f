import Foundation
import HTTPClientCore
import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Maps a Moya failure to the error the client sees.
enum GatewayErrorMapping {
    static func code(for error: MoyaError) -> GatewayErrorCode {
        switch error {
        case .underlying(let underlying, _):
            return code(forUnderlying: underlying)
        case .requestMapping, .parameterEncoding, .encodableMapping:
            return .badRequest
        default:
            return .badGateway
        }
    }

    /// A short, secret-free reason for the access log.
    static func reason(for error: MoyaError) -> String {
        if case .underlying(let underlying, _) = error {
            if let client = underlying as? HTTPClientError { return client.description }
            if let token = underlying as? AccessTokenSourceError { return "no access token: \(token.reason)" }
            if let moya = underlying as? MoyaError { return reason(for: moya) }
            let nsError = underlying as NSError
            if nsError.domain == NSURLErrorDomain, let fault = nsError.userInfo[StubFaultError.faultKey] as? String {
                return "stub fault: \(fault)"
            }
            if nsError.domain == NSURLErrorDomain { return urlErrorReason(code: nsError.code) }
            return String(describing: type(of: underlying))
        }
        if case .statusCode(let response) = error { return "status \(response.statusCode) failed validation" }
        return error.errorDescription ?? "\(error)"
    }

    /// What Moya's `NSURLErrorDomain` errors mean, in the access log's words (a cancelled call is the client's leaving
    /// or the drain, not an upstream fault).
    private static func urlErrorReason(code: Int) -> String {
        switch code {
        case NSURLErrorCancelled: return "cancelled"
        case NSURLErrorTimedOut: return "timed out"
        case NSURLErrorHTTPTooManyRedirects: return "too many redirects"
        default: return "URL error \(code)"
        }
    }

    static func code(forUnderlying error: any Error) -> GatewayErrorCode {
        if error is AccessTokenSourceError { return .upstreamAuthFailed }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .responseTimeout, .responseBodyTimeout: return .gatewayTimeout
            // No connection to the upstream could be had in time: the gateway's own capacity, the request never
            // left (so 503, safe to retry, rather than 504, which says the upstream was too slow to answer).
            case .poolExhausted, .poolWaitTimeout, .shutDown: return .serviceUnavailable
            default: return .badGateway
            }
        }
        if let moya = error as? MoyaError { return code(for: moya) }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut { return .gatewayTimeout }
        return .badGateway
    }
}

extension Result where Success == Moya.Response, Failure == MoyaError {
    /// The response a failure carries (a status that failed validation), if any.
    var failureResponse: Moya.Response? {
        if case .failure(let error) = self { return error.response }
        return nil
    }
}
