import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Used for stubbing responses: what a stubbed request answers.
public enum EndpointSampleResponse {

    /// The network returned a response, including status code and data. The stubbed `Response.response` is nil.
    case networkResponse(Int, Data)

    /// The network returned response which can be fully customized.
    case response(HTTPURLResponse, Data)

    /// The network failed to send the request, or failed to retrieve a response (eg a timeout). The request fails
    /// with `.underlying(error, nil)`.
    case networkError(NSError)
}

/// Class for reifying a target of the `Target` enum unto a concrete `Endpoint`.
///
/// An endpoint is what a provider sends: the URL, method, task and headers of a target, and the sample response
/// that answers it when it is stubbed. Two endpoints are equal when the requests they build are (see ``==(_:_:)``);
/// with `trackInflights`, equal endpoints in flight share one network call.
///
/// - Note: As of Moya 11.0.0 Endpoint is no longer generic.
///   Existing code should work as is after removing the generic.
///   See #1529 and #1524 for the discussion.
open class Endpoint {
    /// A closure returning the sample response a stubbed request answers.
    public typealias SampleResponseClosure = () -> EndpointSampleResponse

    /// A string representation of the URL for the request.
    public var url: String { location.url }

    /// Where the request goes: the URL as given, or an origin and a target kept apart until the whole URL is asked
    /// for (a transport that knows the origin sends the target as it is, and no URL string is built).
    let location: Location

    /// A closure responsible for returning an `EndpointSampleResponse`.
    public let sampleResponseClosure: SampleResponseClosure

    /// The HTTP method for the request.
    public let method: Moya.Method

    /// The `Task` for the request.
    public let task: Task

    /// The HTTP header fields for the request.
    public let httpHeaderFields: [String: String]?

    /// Creates an endpoint.
    ///
    /// - Parameters:
    ///   - url: The whole URL, as a string; `urlRequest()` fails with `MoyaError.requestMapping` if it does not parse.
    ///   - sampleResponseClosure: What a stubbed request answers.
    ///   - method: The HTTP method.
    ///   - task: What the request carries.
    ///   - httpHeaderFields: The request's headers.
    public init(
        url: String,
        sampleResponseClosure: @escaping SampleResponseClosure,
        method: Moya.Method,
        task: Task,
        httpHeaderFields: [String: String]?
    ) {
        self.location = .url(url)
        self.sampleResponseClosure = sampleResponseClosure
        self.method = method
        self.task = task
        self.httpHeaderFields = httpHeaderFields
    }

    /// An endpoint for `target` (origin form: a path and an optional query) at `origin` (`scheme://host[:port]`): its
    /// `url` is the two joined, made only when read.
    package convenience init(
        origin: String, target: String, sampleResponseClosure: @escaping SampleResponseClosure,
        method: Moya.Method, task: Task, httpHeaderFields: [String: String]?
    ) {
        self.init(
            location: .split(origin: origin, target: target), sampleResponseClosure: sampleResponseClosure,
            method: method, task: task, httpHeaderFields: httpHeaderFields)
    }

    init(
        location: Location, sampleResponseClosure: @escaping SampleResponseClosure, method: Moya.Method, task: Task,
        httpHeaderFields: [String: String]?
    ) {
        self.location = location
        self.sampleResponseClosure = sampleResponseClosure
        self.method = method
        self.task = task
        self.httpHeaderFields = httpHeaderFields
    }

    /// Convenience method for creating a new `Endpoint` with the same properties as the receiver, but with added HTTP header fields.
    ///
    /// - Parameter newHTTPHeaderFields: The fields to add; they replace fields of the same name. When it is empty the
    ///   endpoint keeps its fields as they are (`nil` included).
    /// - Returns: The new endpoint.
    open func adding(newHTTPHeaderFields: [String: String]) -> Endpoint {
        Endpoint(
            location: location, sampleResponseClosure: sampleResponseClosure, method: method, task: task,
            httpHeaderFields: add(httpHeaderFields: newHTTPHeaderFields))
    }

    /// Convenience method for creating a new `Endpoint` with the same properties as the receiver, but with replaced `task` parameter.
    ///
    /// - Parameter task: The new task.
    /// - Returns: The new endpoint.
    open func replacing(task: Task) -> Endpoint {
        Endpoint(
            location: location, sampleResponseClosure: sampleResponseClosure, method: method, task: task,
            httpHeaderFields: httpHeaderFields)
    }

    fileprivate func add(httpHeaderFields headers: [String: String]?) -> [String: String]? {
        guard let unwrappedHeaders = headers, unwrappedHeaders.isEmpty == false else {
            return self.httpHeaderFields
        }

        var newHTTPHeaderFields = self.httpHeaderFields ?? [:]
        unwrappedHeaders.forEach { key, value in
            newHTTPHeaderFields[key] = value
        }
        return newHTTPHeaderFields
    }
}

extension Endpoint {
    /// An endpoint's URL: a whole string, or an origin and an origin-form target.
    enum Location {
        case url(String)
        case split(origin: String, target: String)

        var url: String {
            switch self {
            case .url(let url): return url
            case .split(let origin, let target): return origin + target
            }
        }
    }
}

/// Extension for converting an `Endpoint` into a `URLRequest`.
extension Endpoint {
    /// Returns the `Endpoint` converted to a `URLRequest` if valid. Throws an error otherwise.
    ///
    /// The request has the endpoint's URL, method and headers, and what its task encodes (see ``Task``).
    ///
    /// - Returns: The request.
    /// - Throws: `MoyaError.requestMapping` for a URL that does not parse (invalid characters are not silently
    ///   percent-encoded), `MoyaError.parameterEncoding` and `MoyaError.encodableMapping` for encoding failures.
    public func urlRequest() throws -> URLRequest {
        guard let requestURL = URL(string: url, encodingInvalidCharacters: false) else {
            throw MoyaError.requestMapping(url)
        }

        var request = URLRequest(url: requestURL)
        // GET is a new request's method already; setting it again costs Foundation's method normalisation.
        if method != .get { request.httpMethod = method.rawValue }
        request.allHTTPHeaderFields = httpHeaderFields

        switch task {
        case .requestPlain, .uploadFile, .uploadMultipartFormData, .downloadDestination:
            return request
        case .requestData(let data):
            request.httpBody = data
            return request
        case .requestJSONEncodable(let encodable):
            return try request.encoded(encodable: encodable)
        case .requestCustomJSONEncodable(let encodable, let encoder):
            return try request.encoded(encodable: encodable, encoder: encoder)
        case .requestParameters(let parameters, let parameterEncoding):
            return try request.encoded(parameters: parameters, parameterEncoding: parameterEncoding)
        case .uploadCompositeMultipartFormData(_, let urlParameters):
            let parameterEncoding = URLEncoding(destination: .queryString)
            return try request.encoded(parameters: urlParameters, parameterEncoding: parameterEncoding)
        case .downloadParameters(let parameters, let parameterEncoding, _):
            return try request.encoded(parameters: parameters, parameterEncoding: parameterEncoding)
        case .requestCompositeData(let bodyData, let urlParameters):
            request.httpBody = bodyData
            let parameterEncoding = URLEncoding(destination: .queryString)
            return try request.encoded(parameters: urlParameters, parameterEncoding: parameterEncoding)
        case .requestCompositeParameters(let bodyParameters, bodyEncoding: let bodyParameterEncoding, let urlParameters):
            if let bodyParameterEncoding = bodyParameterEncoding as? URLEncoding,
                bodyParameterEncoding.destination != .httpBody
            {
                // Moya calls fatalError here; a bad task is input, so it is reported as an encoding error.
                throw MoyaError.parameterEncoding(MoyaRequestError.compositeBodyEncodingNotHTTPBody)
            }
            let bodyfulRequest = try request.encoded(
                parameters: bodyParameters, parameterEncoding: bodyParameterEncoding)
            let urlEncoding = URLEncoding(destination: .queryString)
            return try bodyfulRequest.encoded(parameters: urlParameters, parameterEncoding: urlEncoding)
        default:
            // The deprecated multipart cases.
            if let urlParameters = task.multipartURLParameters {
                return try request.encoded(
                    parameters: urlParameters, parameterEncoding: URLEncoding(destination: .queryString))
            }
            return request
        }
    }
}

// MARK: - Equatable and Hashable

/// The parts of an `Endpoint` that equality and hashing compare: the encoded URL, method, headers (names compared
/// case-insensitively), body bytes (JSON bodies compared canonically), and the upload payload. Closures (sample
/// responses, download destinations) are not compared.
struct EndpointIdentity: Hashable {
    enum Kind: Hashable {
        case data
        case uploadFile(URL)
        case multipart(MultipartFormData)
        case download
    }

    let url: String
    let method: String
    let headers: [String: String]
    let body: Data?
    let kind: Kind
    /// Whether the URL parsed (and the request was built); `nil` when not yet known: plain and data tasks are
    /// identified without building a `URLRequest`, and only equality (not hashing) needs to know whether it parses.
    private let requestBuilt: Bool?

    init(_ endpoint: Endpoint) {
        let kind: Kind
        switch endpoint.task {
        case .uploadFile(let file): kind = .uploadFile(file)
        case .downloadDestination, .downloadParameters: kind = .download
        default: kind = endpoint.task.multipartFormData.map(Kind.multipart) ?? .data
        }
        self.kind = kind
        switch endpoint.task {
        case .requestPlain, .requestData:
            // What `urlRequest()` would build, read straight from the endpoint: the URL string (kept verbatim by
            // `URL(string:encodingInvalidCharacters: false)`), the method, the headers and the body.
            url = endpoint.url
            method = endpoint.method.rawValue
            headers = EndpointIdentity.canonical(endpoint.httpHeaderFields)
            if case .requestData(let data) = endpoint.task {
                body = EndpointIdentity.canonical(body: data, headers: headers)
            } else {
                body = nil
            }
            requestBuilt = nil
            return
        default:
            break
        }
        if let request = try? endpoint.urlRequest() {
            url = request.url?.absoluteString ?? endpoint.url
            method = request.httpMethod ?? endpoint.method.rawValue
            headers = EndpointIdentity.canonical(request.allHTTPHeaderFields)
            body = EndpointIdentity.canonical(body: request.httpBody, headers: headers)
            requestBuilt = true
        } else {
            url = endpoint.url
            method = endpoint.method.rawValue
            headers = EndpointIdentity.canonical(endpoint.httpHeaderFields)
            body = nil
            requestBuilt = false
        }
    }

    private var parses: Bool { requestBuilt ?? (URL(string: url, encodingInvalidCharacters: false) != nil) }

    func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(method)
        hasher.combine(headers)
        hasher.combine(body)
        hasher.combine(kind)
    }

    static func == (lhs: EndpointIdentity, rhs: EndpointIdentity) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method && lhs.kind == rhs.kind && lhs.headers == rhs.headers
            && lhs.body == rhs.body && lhs.parses == rhs.parses
    }

    static func canonical(_ headers: [String: String]?) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in headers ?? [:] { result[name.lowercased()] = value }
        return result
    }

    static func canonical(body: Data?, headers: [String: String]) -> Data? {
        guard let body, !body.isEmpty, headers["content-type"]?.lowercased().contains("json") == true,
            let object = try? JSONSerialization.jsonObject(with: body, options: .fragmentsAllowed),
            let sorted = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
        else {
            return body
        }
        return sorted
    }
}

extension Endpoint: Equatable, Hashable {
    /// Hashes what equality compares (see ``==(_:_:)``).
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(EndpointIdentity(self))
    }

    /// Two endpoints are equal when the requests they build have the same URL, method, headers and body, and they
    /// upload the same file or multipart form. On Linux `URLRequest ==` ignores headers and body, so the comparison
    /// is made field by field: header names case-insensitively, JSON bodies canonically (key order does not count).
    /// Sample responses and download destinations are not compared.
    ///
    /// - Parameters:
    ///   - lhs: An endpoint.
    ///   - rhs: Another endpoint.
    /// - Returns: Whether the two would send the same request.
    public static func == (lhs: Endpoint, rhs: Endpoint) -> Bool {
        EndpointIdentity(lhs) == EndpointIdentity(rhs)
    }
}
