import Foundation
import HTTPClientCore
import HTTPWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Represents a response to a `MoyaProvider.request`.
///
/// It carries the status code and body, the request that was sent and the `HTTPURLResponse`, and maps the body to
/// JSON, a string or a `Decodable` value. The filters turn an unwanted status into a thrown `MoyaError.statusCode`.
///
/// Immutable; `@unchecked Sendable` because `URLRequest`/`HTTPURLResponse` are not marked `Sendable` on Linux.
public final class Response: CustomDebugStringConvertible, Equatable, @unchecked Sendable {

    /// The status code of the response.
    public let statusCode: Int

    /// The response data.
    ///
    /// For a response on Moya's transport lane it is made on first use from the bytes the transport collected (a
    /// server relaying the body as bytes never needs it).
    public var data: Data { givenData ?? head?.data ?? Data() }

    /// The original URLRequest for the response (the request after the plugins' `prepare`).
    public var request: URLRequest? { requestSource.request }

    /// The HTTPURLResponse object. For responses that came over the network it is built on first use from the
    /// transport's response head (building it costs header dictionary and case work most callers never need).
    public var response: HTTPURLResponse? {
        guard let head else { return givenResponse }
        return head.response
    }

    /// The response head as the transport received it (field order and repetition kept); `nil` for stubs and
    /// responses made by callers. For the gateway, which copies headers without going through `HTTPURLResponse`.
    package var transportHeaders: HTTPFields? { head?.transport.headers }

    /// The HTTP version the response arrived in; `nil` for stubs and responses made by callers.
    package var transportVersion: HTTPVersion? { head?.transport.version }

    /// The body as the transport collected it, the same bytes as `data`; `nil` unless the response came over the
    /// network. For the gateway, which writes the body out as an array (no second copy).
    package var transportBody: [UInt8]? {
        guard let head else { return nil }
        if let givenData, givenData.count != head.transport.body.count { return nil }
        return head.transport.body
    }

    /// How long the exchange took to connect and to receive its first byte; `nil` unless it came over the network.
    package var timings: HTTPClientTimings? { head?.transport.timings }

    /// For a response whose body was streamed (see `MoyaProvider.requestInCurrentTask(_:streamingBodiesAbove:)`): the
    /// exchange, whose `body` delivers the bytes as they arrive; `data` is empty then. Dropping every reference to it
    /// before the body ended aborts the exchange.
    package var streamedBody: HTTPClientStreamingResponse? { head?.transport.streamed }

    /// The transport's head, for a response that came over the network; nil otherwise (stubs and responses made by
    /// callers then need no object of their own for their head).
    private let head: ResponseHead?
    /// The `HTTPURLResponse` the response was made with, when it did not come over the network.
    private let givenResponse: HTTPURLResponse?
    /// The body the response was made with; nil when it is the transport's collected body (see ``data``).
    private let givenData: Data?
    private let requestSource: RequestTypeWrapper

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - statusCode: The HTTP status code.
    ///   - data: The body.
    ///   - request: The request the response answers.
    ///   - response: The HTTP response.
    public convenience init(statusCode: Int, data: Data, request: URLRequest? = nil, response: HTTPURLResponse? = nil) {
        self.init(
            statusCode: statusCode, data: data, requestSource: RequestTypeWrapper(request: request), response: response)
    }

    /// A response whose `request` is made on first use.
    init(statusCode: Int, data: Data, requestSource: RequestTypeWrapper, response: HTTPURLResponse?) {
        self.statusCode = statusCode
        self.givenData = data
        self.requestSource = requestSource
        self.head = nil
        self.givenResponse = response
    }

    /// A response received by the transport; its `HTTPURLResponse` (and `request`, when it came from a
    /// `TransportRequest`) is made lazily.
    init(transport: TransportResponse, data: Data, requestSource: RequestTypeWrapper) {
        self.statusCode = transport.status
        self.givenData = data
        self.requestSource = requestSource
        self.head = ResponseHead(transport: transport)
        self.givenResponse = nil
    }

    /// A response the client received for a request that was not recorded (the on-loop lane's, see
    /// `MoyaLoopCompletion.requestCompleted(exchanged:)`): no `request`, and no URL on its `HTTPURLResponse`.
    convenience init(unrecorded response: consuming HTTPClientResponseOrStream) {
        self.init(
            transport: TransportResponse(response, url: .url(nil)), requestSource: RequestTypeWrapper(request: nil))
    }

    /// A response received by the transport whose body is the one it collected (empty for a streamed body): `data` is
    /// made from those bytes on first use.
    init(transport: TransportResponse, requestSource: RequestTypeWrapper) {
        self.statusCode = transport.status
        self.givenData = nil
        self.requestSource = requestSource
        self.head = ResponseHead(transport: transport)
        self.givenResponse = nil
    }

    /// A text description of the `Response`.
    public var description: String {
        "Status Code: \(statusCode), Data Length: \(data.count)"
    }

    /// A text description of the `Response`. Suitable for debugging.
    public var debugDescription: String { description }

    /// Whether two responses have the same status code, data and `HTTPURLResponse` (the requests are not compared).
    ///
    /// - Parameters:
    ///   - lhs: A response.
    ///   - rhs: Another response.
    /// - Returns: `true` when status code, data and response are equal.
    public static func == (lhs: Response, rhs: Response) -> Bool {
        lhs.statusCode == rhs.statusCode
            && lhs.data == rhs.data
            && lhs.response == rhs.response
    }
}

extension Response {

    /// Returns the `Response` if the `statusCode` falls within the specified range.
    ///
    /// - parameters:
    ///    - statusCodes: The range of acceptable status codes.
    /// - returns: The response itself.
    /// - throws: `MoyaError.statusCode` when others are encountered.
    public func filter<R: RangeExpression>(statusCodes: R) throws -> Response where R.Bound == Int {
        guard statusCodes.contains(statusCode) else {
            throw MoyaError.statusCode(self)
        }
        return self
    }

    /// Returns the `Response` if it has the specified `statusCode`.
    ///
    /// - parameters:
    ///    - statusCode: The acceptable status code.
    /// - returns: The response itself.
    /// - throws: `MoyaError.statusCode` when others are encountered.
    public func filter(statusCode: Int) throws -> Response {
        try filter(statusCodes: statusCode...statusCode)
    }

    /// Returns the `Response` if the `statusCode` falls within the range 200 - 299.
    ///
    /// - returns: The response itself.
    /// - throws: `MoyaError.statusCode` when others are encountered.
    public func filterSuccessfulStatusCodes() throws -> Response {
        try filter(statusCodes: 200...299)
    }

    /// Returns the `Response` if the `statusCode` falls within the range 200 - 399.
    ///
    /// - returns: The response itself.
    /// - throws: `MoyaError.statusCode` when others are encountered.
    public func filterSuccessfulStatusAndRedirectCodes() throws -> Response {
        try filter(statusCodes: 200...399)
    }

    /// Maps data received from the signal into a JSON object.
    ///
    /// - parameter failsOnEmptyData: A Boolean value determining
    /// whether the mapping should fail if the data is empty.
    /// - returns: The JSON object (fragments allowed), or `NSNull()` for empty data when `failsOnEmptyData` is false.
    /// - throws: `MoyaError.jsonMapping` when the data is not JSON.
    public func mapJSON(failsOnEmptyData: Bool = true) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
        } catch {
            if data.isEmpty && !failsOnEmptyData {
                return NSNull()
            }
            throw MoyaError.jsonMapping(self)
        }
    }

    /// Maps data received from the signal into a String.
    ///
    /// - parameter keyPath: Optional dot-separated key path at which to find the string (for example `"a.b"`).
    /// - returns: The body decoded as UTF-8, or the string at the key path of the JSON body.
    /// - throws: `MoyaError.stringMapping`, or `MoyaError.jsonMapping` when a key path is given and the data is not JSON.
    public func mapString(atKeyPath keyPath: String? = nil) throws -> String {
        if let keyPath {
            // Key path was provided, try to parse string at key path
            guard let jsonDictionary = try mapJSON() as? [String: Any],
                let string = KeyPathLookup.value(in: jsonDictionary, atKeyPath: keyPath) as? String
            else {
                throw MoyaError.stringMapping(self)
            }
            return string
        } else {
            // Key path was not provided, parse entire response as string
            guard let string = String(data: data, encoding: .utf8) else {
                throw MoyaError.stringMapping(self)
            }
            return string
        }
    }

    /// Maps data received from the signal into a Decodable object.
    ///
    /// A value at the key path that is not an object or an array (a string, a number) is decoded as it is. With
    /// `failsOnEmptyData` false, empty data decodes as `{}`, then as `[{}]`, so a type whose properties are all optional
    /// still gets a value.
    ///
    /// - parameter type: The type to decode.
    /// - parameter keyPath: Optional dot-separated key path at which to find the object.
    /// - parameter decoder: A `JSONDecoder` instance which is used to decode data to an object.
    /// - parameter failsOnEmptyData: Whether empty data (or a missing key path) fails the mapping.
    /// - returns: The decoded value.
    /// - throws: `MoyaError.jsonMapping` or `MoyaError.objectMapping` (which carries this response).
    public func map<D: Decodable>(
        _ type: D.Type, atKeyPath keyPath: String? = nil, using decoder: JSONDecoder = JSONDecoder(),
        failsOnEmptyData: Bool = true
    ) throws -> D {
        let serializeToData: (Any) throws -> Data? = { jsonObject in
            guard JSONSerialization.isValidJSONObject(jsonObject) else {
                return nil
            }
            do {
                return try JSONSerialization.data(withJSONObject: jsonObject)
            } catch {
                throw MoyaError.jsonMapping(self)
            }
        }
        let jsonData: Data
        keyPathCheck: if let keyPath {
            guard
                let jsonObject = (try mapJSON(failsOnEmptyData: failsOnEmptyData) as? [String: Any])
                    .flatMap({ KeyPathLookup.value(in: $0, atKeyPath: keyPath) })
            else {
                if failsOnEmptyData {
                    throw MoyaError.jsonMapping(self)
                } else {
                    jsonData = data
                    break keyPathCheck
                }
            }

            if let data = try serializeToData(jsonObject) {
                jsonData = data
            } else {
                let wrappedJsonObject = ["value": jsonObject]
                let wrappedJsonData: Data
                if let data = try serializeToData(wrappedJsonObject) {
                    wrappedJsonData = data
                } else {
                    throw MoyaError.jsonMapping(self)
                }
                do {
                    return try decoder.decode(DecodableWrapper<D>.self, from: wrappedJsonData).value
                } catch let error {
                    throw MoyaError.objectMapping(error, self)
                }
            }
        } else {
            jsonData = data
        }
        do {
            if jsonData.isEmpty && !failsOnEmptyData {
                if let emptyDecodableValue = try? decoder.decode(D.self, from: Data("{}".utf8)) {
                    return emptyDecodableValue
                } else if let emptyDecodableValue = try? decoder.decode(D.self, from: Data("[{}]".utf8)) {
                    return emptyDecodableValue
                }
            }
            return try decoder.decode(D.self, from: jsonData)
        } catch let error {
            throw MoyaError.objectMapping(error, self)
        }
    }
}

private struct DecodableWrapper<T: Decodable>: Decodable {
    let value: T
}

/// Dot-separated key path traversal over JSON dictionaries (Linux has no KVC `value(forKeyPath:)`).
enum KeyPathLookup {
    static func value(in dictionary: [String: Any], atKeyPath keyPath: String) -> Any? {
        var current: Any = dictionary
        for key in keyPath.split(separator: ".", omittingEmptySubsequences: false) {
            guard let object = current as? [String: Any], let next = object[String(key)] else { return nil }
            current = next
        }
        return current
    }
}
