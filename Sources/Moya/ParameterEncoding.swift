import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A dictionary of parameters to apply to a `URLRequest`.
public typealias Parameters = [String: Any]

/// Types adopting the `URLRequestConvertible` protocol can be used to construct `URLRequest`s.
public protocol URLRequestConvertible {
    /// Returns a `URLRequest` or throws if an `Error` was encountered.
    ///
    /// - Returns: The request.
    /// - Throws: Any error met while making it.
    func asURLRequest() throws -> URLRequest
}

extension URLRequest: URLRequestConvertible {
    /// Returns `self`.
    ///
    /// - Returns: The request itself.
    /// - Throws: Nothing; a `URLRequest` is already a request.
    public func asURLRequest() throws -> URLRequest { self }
}

/// A type used to define how a set of parameters are applied to a `URLRequest`.
public protocol ParameterEncoding {
    /// Creates a `URLRequest` by encoding parameters and applying them on the passed request.
    ///
    /// - Parameters:
    ///   - urlRequest: `URLRequestConvertible` value onto which parameters will be encoded.
    ///   - parameters: `Parameters` to encode onto the request.
    /// - Returns:      The encoded `URLRequest`.
    /// - Throws:       Any `Error` produced during parameter encoding.
    func encode(_ urlRequest: URLRequestConvertible, with parameters: Parameters?) throws -> URLRequest
}

/// Why a built-in `ParameterEncoding` failed.
public enum ParameterEncodingFailure: Error, LocalizedError {
    /// The request had no URL to encode query parameters into.
    case missingURL
    /// `JSONSerialization` could not encode the parameters.
    case jsonEncodingFailed(Error)

    /// A message saying why the encoding failed.
    public var errorDescription: String? {
        switch self {
        case .missingURL:
            return "URL request to encode was missing a URL"
        case .jsonEncodingFailed(let error):
            return "JSON could not be encoded because of error:\n\(error.localizedDescription)"
        }
    }
}

// MARK: - URLEncoding

/// Creates a url-encoded query string to be set as or appended to any existing URL query string or set as the HTTP
/// body of the URL request, exactly as Alamofire 5 does.
///
/// Top-level keys are sorted; nested dictionary keys are sorted too (Alamofire leaves them in dictionary order, which
/// is random on Linux). Arrays become `key[]`, `key` or `key[i]`; Bools `1`/`0` or `true`/`false`.
public struct URLEncoding: ParameterEncoding {

    /// Defines whether the url-encoded query string is applied to the existing query string or HTTP body.
    public enum Destination: Equatable, Sendable {
        /// GET, HEAD and DELETE encode into the URL; everything else into the body.
        case methodDependent
        /// Always the URL query string.
        case queryString
        /// Always the HTTP body.
        case httpBody

        func encodesParametersInURL(for method: Moya.Method) -> Bool {
            switch self {
            case .methodDependent: return [.get, .head, .delete].contains(method)
            case .queryString: return true
            case .httpBody: return false
            }
        }
    }

    /// Configures how `Array` parameters are encoded.
    public enum ArrayEncoding: Sendable {
        /// An empty set of square brackets is appended to the key for every value: `key[]=v`.
        case brackets
        /// No brackets are appended: `key=v`.
        case noBrackets
        /// Brackets containing the item index are appended: `key[0]=v`.
        case indexInBrackets
        /// A custom closure makes the key from the key and index.
        case custom(@Sendable (_ key: String, _ index: Int) -> String)

        func encode(key: String, atIndex index: Int) -> String {
            switch self {
            case .brackets: return "\(key)[]"
            case .noBrackets: return key
            case .indexInBrackets: return "\(key)[\(index)]"
            case .custom(let encoding): return encoding(key, index)
            }
        }
    }

    /// Configures how `Bool` parameters are encoded.
    public enum BoolEncoding: Sendable {
        /// Encode `true` as `1` and `false` as `0`.
        case numeric
        /// Encode `true` and `false` as string literals.
        case literal

        func encode(value: Bool) -> String {
            switch self {
            case .numeric: return value ? "1" : "0"
            case .literal: return value ? "true" : "false"
            }
        }
    }

    /// Returns a default `URLEncoding` instance with a `.methodDependent` destination.
    public static var `default`: URLEncoding { URLEncoding() }

    /// Returns a `URLEncoding` instance with a `.queryString` destination.
    public static var queryString: URLEncoding { URLEncoding(destination: .queryString) }

    /// Returns a `URLEncoding` instance with an `.httpBody` destination.
    public static var httpBody: URLEncoding { URLEncoding(destination: .httpBody) }

    /// The destination defining where the encoded query string is to be applied to the URL request.
    public let destination: Destination

    /// The encoding to use for `Array` parameters.
    public let arrayEncoding: ArrayEncoding

    /// The encoding to use for `Bool` parameters.
    public let boolEncoding: BoolEncoding

    /// Creates an instance using the specified parameters.
    ///
    /// - Parameters:
    ///   - destination: Where the parameters go; `.methodDependent` by default.
    ///   - arrayEncoding: How array keys are written; `.brackets` by default.
    ///   - boolEncoding: How Booleans are written; `.numeric` by default.
    public init(
        destination: Destination = .methodDependent,
        arrayEncoding: ArrayEncoding = .brackets,
        boolEncoding: BoolEncoding = .numeric
    ) {
        self.destination = destination
        self.arrayEncoding = arrayEncoding
        self.boolEncoding = boolEncoding
    }

    /// Encodes the parameters into the request's URL query (appended to any query it has) or its body.
    ///
    /// A body gets `Content-Type: application/x-www-form-urlencoded; charset=utf-8` unless the request has one.
    ///
    /// - Parameters:
    ///   - urlRequest: The request to encode the parameters onto.
    ///   - parameters: The parameters; nil leaves the request unchanged.
    /// - Returns: The encoded request.
    /// - Throws: `ParameterEncodingFailure.missingURL` when the parameters go into the URL and the request has none,
    ///   or what `asURLRequest()` throws.
    public func encode(_ urlRequest: URLRequestConvertible, with parameters: Parameters?) throws -> URLRequest {
        var urlRequest = try urlRequest.asURLRequest()
        guard let parameters else { return urlRequest }

        let method = Moya.Method(rawValue: urlRequest.httpMethod ?? "GET")
        if destination.encodesParametersInURL(for: method) {
            guard let url = urlRequest.url else { throw ParameterEncodingFailure.missingURL }
            if var components = URLComponents(url: url, resolvingAgainstBaseURL: false), !parameters.isEmpty {
                let percentEncodedQuery = (components.percentEncodedQuery.map { $0 + "&" } ?? "") + query(parameters)
                components.percentEncodedQuery = percentEncodedQuery
                urlRequest.url = components.url
            }
        } else {
            if urlRequest.value(forHTTPHeaderField: "Content-Type") == nil {
                urlRequest.setValue(
                    "application/x-www-form-urlencoded; charset=utf-8", forHTTPHeaderField: "Content-Type")
            }
            urlRequest.httpBody = Data(query(parameters).utf8)
        }
        return urlRequest
    }

    /// Creates a percent-escaped, URL encoded query string components from the given key-value pair recursively.
    ///
    /// - Parameters:
    ///   - key: The key, unescaped.
    ///   - value: A dictionary, an array, a number, a Boolean, or anything else (written as `"\(value)"`).
    /// - Returns: The escaped key and value pairs.
    public func queryComponents(fromKey key: String, value: Any) -> [(String, String)] {
        var components: [(String, String)] = []
        switch value {
        case let dictionary as [String: Any]:
            for (nestedKey, value) in dictionary.sorted(by: { $0.key < $1.key }) {
                components += queryComponents(fromKey: "\(key)[\(nestedKey)]", value: value)
            }
        case let array as [Any]:
            for (index, value) in array.enumerated() {
                components += queryComponents(fromKey: arrayEncoding.encode(key: key, atIndex: index), value: value)
            }
        case let number as NSNumber:
            if number.isBool {
                components.append((escape(key), escape(boolEncoding.encode(value: number.boolValue))))
            } else {
                components.append((escape(key), escape("\(number)")))
            }
        case let bool as Bool:
            components.append((escape(key), escape(boolEncoding.encode(value: bool))))
        default:
            components.append((escape(key), escape("\(value)")))
        }
        return components
    }

    /// Creates a percent-escaped string following RFC 3986 for a query string key or value.
    ///
    /// - Parameter string: The string to escape.
    /// - Returns: The escaped string (`?` and `/` are left as they are).
    public func escape(_ string: String) -> String {
        string.addingPercentEncoding(withAllowedCharacters: .afURLQueryAllowed) ?? string
    }

    func query(_ parameters: [String: Any]) -> String {
        var components: [(String, String)] = []
        for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
            components += queryComponents(fromKey: key, value: value)
        }
        return components.map { "\($0)=\($1)" }.joined(separator: "&")
    }
}

extension NSNumber {
    fileprivate var isBool: Bool { String(cString: objCType) == "c" }
}

extension CharacterSet {
    /// `urlQueryAllowed` minus the RFC 3986 general and sub-delimiters, except `?` and `/`.
    public static let afURLQueryAllowed: CharacterSet = {
        let generalDelimitersToEncode = ":#[]@"  // does not include "?" or "/" due to RFC 3986 - Section 3.4
        let subDelimitersToEncode = "!$&'()*+,;="
        let encodableDelimiters = CharacterSet(charactersIn: "\(generalDelimitersToEncode)\(subDelimitersToEncode)")
        return CharacterSet.urlQueryAllowed.subtracting(encodableDelimiters)
    }()
}

// MARK: - JSONEncoding

/// Uses `JSONSerialization` to create a JSON representation of the parameters object, which is set as the body of
/// the request. `Content-Type` is set to `application/json` when absent.
///
/// Keys are always written sorted (`.sortedKeys` is added to the options) so equal parameters give equal bytes; this
/// keeps `Endpoint` equality and `trackInflights` deterministic on Linux, where dictionary order is random.
public struct JSONEncoding: ParameterEncoding {

    /// Errors specific to `JSONEncoding`.
    public enum Error: Swift.Error {
        /// The parameters are not a valid JSON object.
        case invalidJSONObject
    }

    /// Returns a `JSONEncoding` instance with default writing options.
    public static var `default`: JSONEncoding { JSONEncoding() }

    /// Returns a `JSONEncoding` instance with `.prettyPrinted` writing options.
    public static var prettyPrinted: JSONEncoding { JSONEncoding(options: .prettyPrinted) }

    /// The options for writing the parameters as JSON data.
    public let options: JSONSerialization.WritingOptions

    /// Creates an instance using the specified `WritingOptions`.
    ///
    /// - Parameter options: The options for `JSONSerialization`; `.sortedKeys` is always added.
    public init(options: JSONSerialization.WritingOptions = []) {
        self.options = options
    }

    /// Encodes the parameters as the request's JSON body.
    ///
    /// - Parameters:
    ///   - urlRequest: The request to encode the parameters onto.
    ///   - parameters: The parameters; nil leaves the request unchanged.
    /// - Returns: The encoded request.
    /// - Throws: `ParameterEncodingFailure.jsonEncodingFailed` when the parameters are not a valid JSON object.
    public func encode(_ urlRequest: URLRequestConvertible, with parameters: Parameters?) throws -> URLRequest {
        try encode(urlRequest, withJSONObject: parameters)
    }

    /// Encodes any JSON compatible object into a `URLRequest`.
    ///
    /// - Parameters:
    ///   - urlRequest: The request to encode the object onto.
    ///   - jsonObject: A dictionary or an array (of strings, numbers, Booleans, `NSNull`, dictionaries and arrays);
    ///     nil leaves the request unchanged.
    /// - Returns: The encoded request.
    /// - Throws: `ParameterEncodingFailure.jsonEncodingFailed` when the object is not valid JSON.
    public func encode(_ urlRequest: URLRequestConvertible, withJSONObject jsonObject: Any? = nil) throws -> URLRequest
    {
        var urlRequest = try urlRequest.asURLRequest()
        guard let jsonObject else { return urlRequest }
        guard JSONSerialization.isValidJSONObject(jsonObject) else {
            throw ParameterEncodingFailure.jsonEncodingFailed(Error.invalidJSONObject)
        }
        do {
            let data = try JSONSerialization.data(withJSONObject: jsonObject, options: options.union(.sortedKeys))
            if urlRequest.value(forHTTPHeaderField: "Content-Type") == nil {
                urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            urlRequest.httpBody = data
        } catch {
            throw ParameterEncodingFailure.jsonEncodingFailed(error)
        }
        return urlRequest
    }
}
