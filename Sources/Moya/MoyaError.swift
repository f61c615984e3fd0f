import Foundation
import HTTPClientCore

/// A type representing possible errors Moya can throw.
///
/// Transport failures (a refused connection, a timeout, a cancelled request) and validation failures arrive as
/// ``underlying(_:_:)``; `response` is the response whenever there was one.
public enum MoyaError: Swift.Error {

    /// Indicates a response failed to map to an image (kept for compatibility: there is no image mapping on Linux).
    case imageMapping(Response)

    /// Indicates a response failed to map to a JSON structure.
    case jsonMapping(Response)

    /// Indicates a response failed to map to a String.
    case stringMapping(Response)

    /// Indicates a response failed to map to a Decodable object.
    case objectMapping(Swift.Error, Response)

    /// Indicates that Encodable couldn't be encoded into Data
    case encodableMapping(Swift.Error)

    /// Indicates a response failed with an invalid HTTP status code.
    case statusCode(Response)

    /// Indicates a response failed due to an underlying `Error`.
    case underlying(Swift.Error, Response?)

    /// Indicates that an `Endpoint` failed to map to a `URLRequest`.
    case requestMapping(String)

    /// Indicates that an `Endpoint` failed to encode the parameters for the `URLRequest`.
    case parameterEncoding(Swift.Error)
}

extension MoyaError {
    /// Depending on error type, returns a `Response` object.
    public var response: Moya.Response? {
        switch self {
        case .imageMapping(let response): return response
        case .jsonMapping(let response): return response
        case .stringMapping(let response): return response
        case .objectMapping(_, let response): return response
        case .encodableMapping: return nil
        case .statusCode(let response): return response
        case .underlying(_, let response): return response
        case .requestMapping: return nil
        case .parameterEncoding: return nil
        }
    }

    /// Depending on error type, returns an underlying `Error`.
    internal var underlyingError: Swift.Error? {
        switch self {
        case .imageMapping: return nil
        case .jsonMapping: return nil
        case .stringMapping: return nil
        case .objectMapping(let error, _): return error
        case .encodableMapping(let error): return error
        case .statusCode: return nil
        case .underlying(let error, _): return error
        case .requestMapping: return nil
        case .parameterEncoding(let error): return error
        }
    }
}

// MARK: - Error Descriptions

extension MoyaError: LocalizedError {
    /// A message describing the error; for `.underlying`, the underlying error's.
    public var errorDescription: String? {
        switch self {
        case .imageMapping:
            return "Failed to map data to an Image."
        case .jsonMapping:
            return "Failed to map data to JSON."
        case .stringMapping:
            return "Failed to map data to a String."
        case .objectMapping:
            return "Failed to map data to a Decodable object."
        case .encodableMapping:
            return "Failed to encode Encodable object into data."
        case .statusCode:
            return "Status code didn't fall within the given range."
        case .underlying(let error, _):
            // The transport's errors are not `LocalizedError`s: Foundation would describe them as "The operation could
            // not be completed. (HTTPClientCore.HTTPClientError error 2.)". Their own description is the readable one.
            if let transportError = error as? HTTPClientError { return transportError.description }
            return error.localizedDescription
        case .requestMapping:
            return "Failed to map Endpoint to a URLRequest."
        case .parameterEncoding(let error):
            return "Failed to encode parameters for URLRequest. \(error.localizedDescription)"
        }
    }
}

// MARK: - Error User Info

extension MoyaError: CustomNSError {
    /// `NSLocalizedDescriptionKey` with ``errorDescription`` and `NSUnderlyingErrorKey` with the underlying error,
    /// if any.
    public var errorUserInfo: [String: Any] {
        var userInfo: [String: Any] = [:]
        userInfo[NSLocalizedDescriptionKey] = errorDescription
        userInfo[NSUnderlyingErrorKey] = underlyingError
        return userInfo
    }
}

/// Errors Moya reports for requests it cannot send (instead of crashing as Moya does).
///
/// They arrive wrapped in a ``MoyaError``: as `.underlying(error, nil)`, except
/// ``compositeBodyEncodingNotHTTPBody`` (`.parameterEncoding(error)`) and ``unsupportedURL(_:)`` (reported as
/// `.requestMapping(url)`).
public enum MoyaRequestError: Swift.Error, LocalizedError, Equatable {
    /// A multipart upload on a method that cannot carry a multipart body (only POST, PUT, PATCH and CONNECT can).
    case multipartNotSupported(method: String)
    /// A multipart upload with no parts.
    case emptyMultipartForm
    /// `requestCompositeParameters` with a `URLEncoding` body encoding whose destination is not `.httpBody`.
    case compositeBodyEncodingNotHTTPBody
    /// The URL is not an absolute `http` or `https` URL the transport can reach.
    case unsupportedURL(String)
    /// A stubbed provider was asked to stub with `.never`.
    case stubBehaviorNever

    /// A message saying what was wrong with the request.
    public var errorDescription: String? {
        switch self {
        case .multipartNotSupported(let method):
            return "A \(method) request cannot carry a multipart/form-data body; use POST, PUT, PATCH or CONNECT."
        case .emptyMultipartForm:
            return "A multipart/form-data upload needs at least one part."
        case .compositeBodyEncodingNotHTTPBody:
            return
                "Only URLEncoding with an .httpBody destination can be used as the body encoding of requestCompositeParameters."
        case .unsupportedURL(let url):
            return "The URL \(url) is not an absolute http or https URL."
        case .stubBehaviorNever:
            return "A stub was requested with StubBehavior.never."
        }
    }
}
