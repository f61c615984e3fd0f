import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ordered, case-insensitive collection of HTTP headers, as Alamofire's `HTTPHeaders`, so that session set-up
/// written for Moya (`configuration.headers = .default`) compiles unchanged.
///
/// Names compare case-insensitively; adding or updating a name that is present replaces its value in place.
public struct HTTPHeaders: Equatable, Hashable, Sendable {
    private var headers: [HTTPHeader] = []

    /// An empty collection.
    public init() {}

    /// The headers in order; later duplicates (case-insensitively) replace earlier values.
    ///
    /// - Parameter headers: The headers.
    public init(_ headers: [HTTPHeader]) {
        headers.forEach { update($0) }
    }

    /// The dictionary's headers.
    ///
    /// - Parameter dictionary: Header names and values.
    public init(_ dictionary: [String: String]) {
        dictionary.forEach { update(HTTPHeader(name: $0.key, value: $0.value)) }
    }

    /// The string fields of a Foundation header dictionary (`httpAdditionalHeaders`, `allHeaderFields`); fields whose
    /// name or value is not a string are skipped.
    init(stringFieldsOf fields: [AnyHashable: Any]) {
        for (name, value) in fields {
            if let name = name as? String, let value = value as? String { update(name: name, value: value) }
        }
    }

    /// Adds or replaces the header called `name`.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value.
    public mutating func add(name: String, value: String) { update(HTTPHeader(name: name, value: value)) }

    /// Adds or replaces `header`.
    ///
    /// - Parameter header: The header.
    public mutating func add(_ header: HTTPHeader) { update(header) }

    /// Adds or replaces the header called `name`.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value.
    public mutating func update(name: String, value: String) { update(HTTPHeader(name: name, value: value)) }

    /// Adds or replaces `header`.
    ///
    /// - Parameter header: The header.
    public mutating func update(_ header: HTTPHeader) {
        guard let index = headers.index(of: header.name) else {
            headers.append(header)
            return
        }
        headers.replaceSubrange(index...index, with: [header])
    }

    /// Removes the header called `name`, if present.
    ///
    /// - Parameter name: The header's name, in any case.
    public mutating func remove(name: String) {
        guard let index = headers.index(of: name) else { return }
        headers.remove(at: index)
    }

    /// Sorts the headers by name, case-insensitively.
    public mutating func sort() {
        headers.sort { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// The headers sorted by name, case-insensitively.
    ///
    /// - Returns: A sorted copy.
    public func sorted() -> HTTPHeaders {
        var headers = self
        headers.sort()
        return headers
    }

    /// The value of the header called `name`, if present.
    ///
    /// - Parameter name: The header's name, in any case.
    /// - Returns: Its value, or nil.
    public func value(for name: String) -> String? {
        headers.index(of: name).map { headers[$0].value }
    }

    /// The value of the header called `name`; setting nil removes it.
    ///
    /// - Parameter name: The header's name, in any case.
    /// - Returns: Its value, or nil.
    public subscript(_ name: String) -> String? {
        get { value(for: name) }
        set {
            if let newValue {
                update(name: name, value: newValue)
            } else {
                remove(name: name)
            }
        }
    }

    /// The headers as a dictionary.
    public var dictionary: [String: String] {
        Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// `Accept-Encoding`, `Accept-Language` and `User-Agent` (see ``Session/defaultHTTPHeaders``).
    public static let `default`: HTTPHeaders = [.defaultAcceptEncoding, .defaultAcceptLanguage, .defaultUserAgent]
}

extension HTTPHeaders: ExpressibleByDictionaryLiteral {
    /// The literal's headers, in order; later duplicates replace earlier values.
    ///
    /// - Parameter elements: Header names and values.
    public init(dictionaryLiteral elements: (String, String)...) {
        elements.forEach { update(name: $0.0, value: $0.1) }
    }
}

extension HTTPHeaders: ExpressibleByArrayLiteral {
    /// The literal's headers, in order; later duplicates replace earlier values.
    ///
    /// - Parameter elements: The headers.
    public init(arrayLiteral elements: HTTPHeader...) {
        self.init(elements)
    }
}

extension HTTPHeaders: Sequence {
    /// Iterates over the headers in order.
    ///
    /// - Returns: An iterator over the headers.
    public func makeIterator() -> IndexingIterator<[HTTPHeader]> { headers.makeIterator() }
}

extension HTTPHeaders: Collection {
    /// The position of the first header.
    public var startIndex: Int { headers.startIndex }
    /// The position past the last header.
    public var endIndex: Int { headers.endIndex }
    /// The header at `position`.
    ///
    /// - Parameter position: A valid position.
    /// - Returns: The header there.
    public subscript(position: Int) -> HTTPHeader { headers[position] }
    /// The position after `index`.
    ///
    /// - Parameter index: A valid position.
    /// - Returns: The next position.
    public func index(after index: Int) -> Int { headers.index(after: index) }
}

extension HTTPHeaders: CustomStringConvertible {
    /// One `Name: value` line per header.
    public var description: String {
        headers.map(\.description).joined(separator: "\n")
    }
}

/// One HTTP header, as Alamofire's `HTTPHeader`, with its common constructors.
public struct HTTPHeader: Equatable, Hashable, Sendable {
    /// The header's name, as given (compared case-insensitively by ``HTTPHeaders``).
    public let name: String
    /// The header's value.
    public let value: String

    /// Creates a header.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension HTTPHeader: CustomStringConvertible {
    /// `Name: value`.
    public var description: String { "\(name): \(value)" }
}

extension HTTPHeader {
    /// An `Accept` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func accept(_ value: String) -> HTTPHeader { HTTPHeader(name: "Accept", value: value) }

    /// An `Accept-Charset` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func acceptCharset(_ value: String) -> HTTPHeader { HTTPHeader(name: "Accept-Charset", value: value) }

    /// An `Accept-Language` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func acceptLanguage(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Accept-Language", value: value)
    }

    /// An `Accept-Encoding` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func acceptEncoding(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Accept-Encoding", value: value)
    }

    /// `Basic` credentials, base64-encoded as `username:password`.
    ///
    /// - Parameters:
    ///   - username: The user name.
    ///   - password: The password.
    /// - Returns: The `Authorization` header.
    public static func authorization(username: String, password: String) -> HTTPHeader {
        authorization("Basic \(Data("\(username):\(password)".utf8).base64EncodedString())")
    }

    /// `Bearer` credentials.
    ///
    /// - Parameter bearerToken: The token.
    /// - Returns: The `Authorization` header.
    public static func authorization(bearerToken: String) -> HTTPHeader { authorization("Bearer \(bearerToken)") }

    /// An `Authorization` header.
    ///
    /// - Parameter value: The header's whole value, scheme included.
    /// - Returns: The header.
    public static func authorization(_ value: String) -> HTTPHeader { HTTPHeader(name: "Authorization", value: value) }

    /// A `Content-Disposition` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func contentDisposition(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Content-Disposition", value: value)
    }

    /// A `Content-Encoding` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func contentEncoding(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Content-Encoding", value: value)
    }

    /// A `Content-Type` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func contentType(_ value: String) -> HTTPHeader { HTTPHeader(name: "Content-Type", value: value) }

    /// A `User-Agent` header.
    ///
    /// - Parameter value: The header's value.
    /// - Returns: The header.
    public static func userAgent(_ value: String) -> HTTPHeader { HTTPHeader(name: "User-Agent", value: value) }

    /// `gzip;q=1.0, deflate;q=0.9`: what the transport decodes.
    public static let defaultAcceptEncoding = acceptEncoding(Session.defaultAcceptEncoding)
    /// The preferred languages, at most six, with decreasing quality.
    public static let defaultAcceptLanguage = acceptLanguage(Session.defaultAcceptLanguage)
    /// `<executable>/<version> (<bundle>; build:<build>; Linux <x.y.z>) Moya/<version>`.
    public static let defaultUserAgent = userAgent(Session.defaultUserAgent)
}

extension URLSessionConfiguration {
    /// `httpAdditionalHeaders` as ``HTTPHeaders`` (Alamofire's extension): what `Session(configuration:)` adds to
    /// every request. Non-string keys or values are skipped when read.
    public var headers: HTTPHeaders {
        get { HTTPHeaders(stringFieldsOf: httpAdditionalHeaders ?? [:]) }
        set { httpAdditionalHeaders = newValue.dictionary }
    }
}

extension URLRequest {
    /// `allHTTPHeaderFields` as ``HTTPHeaders`` (Alamofire's extension).
    public var headers: HTTPHeaders {
        get { allHTTPHeaderFields.map(HTTPHeaders.init) ?? HTTPHeaders() }
        set { allHTTPHeaderFields = newValue.dictionary }
    }
}

extension HTTPURLResponse {
    /// `allHeaderFields` as ``HTTPHeaders`` (Alamofire's extension); non-string keys or values are skipped.
    public var headers: HTTPHeaders { HTTPHeaders(stringFieldsOf: allHeaderFields) }
}

extension Array where Element == HTTPHeader {
    fileprivate func index(of name: String) -> Int? {
        let lowercased = name.lowercased()
        return firstIndex { $0.name.lowercased() == lowercased }
    }
}
