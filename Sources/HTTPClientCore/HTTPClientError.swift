import NetCore

/// Why an ``HTTPClient`` request failed.
package enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not an absolute `http`/`https` URL the client can reach.
    case invalidURL(String)
    /// The host name did not resolve.
    case nameResolutionFailed(host: String)
    /// The TCP connection was refused or could not be made.
    case connectFailed(reason: String)
    /// The connection was not established within the connect timeout.
    case connectTimeout
    /// No byte of the response arrived within the response timeout, or before the request's deadline.
    case responseTimeout
    /// Part of the response arrived (its head, or over HTTP/1.1 possibly only part of it), then nothing more for the
    /// response timeout, or the request's deadline passed before the response was complete. Unlike
    /// ``responseTimeout``, the server may have acted on the request: it is not a failure to retry blindly.
    case responseBodyTimeout
    /// The TLS handshake or certificate verification failed.
    case tlsFailed(reason: String)
    /// The upstream sent bytes that are not a valid HTTP response (status line, framing, headers, size limits).
    case malformedResponse(reason: String)
    /// The connection closed or was reset before the response was complete.
    case connectionClosed(responseStarted: Bool)
    /// The HTTP/2 server reset the request's stream (`errorCode` is the RST_STREAM code's name).
    case streamReset(errorCode: String)
    /// The per-origin pool was full and so was its wait queue; the request was not sent.
    case poolExhausted
    /// The request waited longer than ``HTTPClient/Configuration/maxWaitTime`` for a connection or an HTTP/2 stream;
    /// it was not sent.
    case poolWaitTimeout
    /// The request body could not be sent: the file could not be read, the stream threw, or it produced more or
    /// fewer bytes than its declared length. An HTTP/1.1 connection it was being sent on is closed, never reused; on
    /// HTTP/2 its stream is reset.
    case requestBodyFailed(reason: String)
    /// A decompressed body went past the configured size or ratio cap.
    case decompressionLimitExceeded
    /// The request was cancelled.
    case cancelled
    /// The client has been shut down.
    case shutDown
    /// A request to switch protocols (``HTTPClientRequest/Body/upgrade(_:)``) to an origin the client may speak
    /// HTTP/2 to, which has no upgrade; it was not sent.
    case upgradeRequiresHTTP1

    package var description: String {
        switch self {
        case .invalidURL(let url): return "invalid URL: \(url)"
        case .nameResolutionFailed(let host): return "could not resolve host \(host)"
        case .connectFailed(let reason): return "connect failed: \(reason)"
        case .connectTimeout: return "connect timed out"
        case .responseTimeout: return "response timed out"
        case .responseBodyTimeout: return "response body timed out"
        case .tlsFailed(let reason): return "TLS failed: \(reason)"
        case .malformedResponse(let reason): return "malformed response: \(reason)"
        case .connectionClosed(let started):
            return started ? "connection closed mid-response" : "connection closed before a response"
        case .streamReset(let code): return "stream reset by the server (\(code))"
        case .poolExhausted: return "connection pool exhausted"
        case .poolWaitTimeout: return "timed out waiting for a connection"
        case .requestBodyFailed(let reason): return "request body failed: \(reason)"
        case .decompressionLimitExceeded: return "decompressed body exceeds the limit"
        case .cancelled: return "cancelled"
        case .shutDown: return "client shut down"
        case .upgradeRequiresHTTP1: return "protocol upgrade needs HTTP/1.1 (http2 never) to this origin"
        }
    }
}

extension HTTPClientError {
    /// Why the exchanges given to a connection that closed before it became active failed, from the error the
    /// connection closed with: a TLS failure, the client's own error (a connect timeout), else a failed connect.
    init(closedBeforeActive error: (any Error)?) {
        if let tlsError = error as? TLSError {
            self = .tlsFailed(reason: tlsError.reason)
        } else if let clientError = error as? HTTPClientError {
            self = clientError
        } else {
            self = .connectFailed(reason: error.map { "\($0)" } ?? "closed")
        }
    }
}
