import Foundation
import HTTPClientCore
import HTTPWire

extension Endpoint {
    /// The `TransportRequest` that `urlRequest()` describes, for tasks that need no encoding (`requestPlain`,
    /// `requestData`); nil for the others. Header fields are sent in name order, as `Session` sends a `URLRequest`'s.
    /// - Parameters:
    ///   - omittedHeader: a field left out (any case), e.g. one that only marks the endpoint's identity.
    ///   - knownOrigin: an origin most endpoints of the caller go to: a URL that starts with its prefix and then `/`
    ///     is split without parsing it again.
    /// - Returns: `.failure(.requestMapping)` for a URL the transport cannot send to.
    package func transportRequest(
        omittingHeader omittedHeader: String? = nil,
        knownOrigin: KnownOrigin? = nil
    ) -> Result<TransportRequest, MoyaError>? {
        guard let body = TransportRequest.body(of: task) else { return nil }
        let headers = TransportRequest.fields(httpHeaderFields, omitting: omittedHeader)
        let method = HTTPMethod(rawValue: method.rawValue)
        if let knownOrigin, let target = target(after: knownOrigin.prefix) {
            return .success(
                TransportRequest(
                    http: HTTPClientRequest(
                        method: method, origin: knownOrigin.origin, target: target,
                        headers: headers, body: body)))
        }
        do {
            return .success(
                TransportRequest(http: try HTTPClientRequest(method: method, url: url, headers: headers, body: body)))
        } catch {
            return .failure(.requestMapping(url))
        }
    }

    /// The origin-form target of the URL when the URL is `prefix` followed by `/` and no fragment; nil otherwise.
    private func target(after prefix: String) -> String? {
        switch location {
        case .url(let url):
            return Self.target(of: url, after: prefix)
        case .split(let origin, let target):
            guard origin == prefix, target.utf8.first == UInt8(ascii: "/"), !Self.hasFragment(target) else {
                return Self.target(of: origin + target, after: prefix)
            }
            return target
        }
    }

    /// Whether `target` has a `#`, read from its contiguous bytes (`String.UTF8View.contains` walks the view's
    /// generic iterator, a few times slower).
    static func hasFragment(_ target: String) -> Bool {
        target.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "#")) }
            ?? target.utf8.contains(UInt8(ascii: "#"))
    }

    /// The origin-form target of `url` when it is `prefix` followed by `/` and no fragment; nil otherwise.
    private static func target(of url: String, after prefix: String) -> String? {
        // `withUTF8` makes either string contiguous first if it is not (bridged), so one path covers every string.
        var url = url
        var prefix = prefix
        return url.withUTF8 { url in
            prefix.withUTF8 { prefix -> String? in
                guard url.count > prefix.count, let urlStart = url.baseAddress, let prefixStart = prefix.baseAddress,
                    memcmp(urlStart, prefixStart, prefix.count) == 0
                else { return nil }
                let rest = UnsafeBufferPointer(rebasing: url[prefix.count...])
                guard rest[0] == UInt8(ascii: "/"), !rest.contains(UInt8(ascii: "#")) else { return nil }
                return String(decoding: rest, as: UTF8.self)
            }
        }
    }
}

/// An origin most of a caller's endpoints go to, and its URL prefix (`origin.description`); see
/// ``Endpoint/transportRequest(omittingHeader:knownOrigin:)``. A class, so that handing it over costs one reference
/// count rather than one per string.
package final class KnownOrigin: Sendable {
    /// The origin as a URL prefix, `scheme://host[:port]`.
    package let prefix: String
    package let origin: HTTPOrigin

    package init(_ origin: HTTPOrigin) {
        self.origin = origin
        prefix = origin.description
    }
}

extension TransportRequest {
    /// The request `Endpoint.transportRequest(omittingHeader:knownOrigin:)` makes of an endpoint at `knownOrigin` with
    /// this `target`, `method`, `headers` and `task`, made without the endpoint: nil for a task that needs encoding,
    /// or a target that is not origin-form (a `/` first, no fragment).
    package static func known(
        _ knownOrigin: KnownOrigin, target: String, method: Moya.Method, headers: [String: String]?, task: Task
    ) -> TransportRequest? {
        guard target.utf8.first == UInt8(ascii: "/"), !Endpoint.hasFragment(target), let body = body(of: task) else {
            return nil
        }
        return TransportRequest(
            http: HTTPClientRequest(
                method: HTTPMethod(rawValue: method.rawValue), origin: knownOrigin.origin, target: target,
                headers: fields(headers, omitting: nil), body: body))
    }

    /// The body of a task that needs no encoding (`requestPlain`, `requestData`); nil for the others.
    static func body(of task: Task) -> HTTPClientRequest.Body? {
        switch task {
        case .requestPlain: return HTTPClientRequest.Body.none
        case .requestData(let data): return data.isEmpty ? HTTPClientRequest.Body.none : .bytes([UInt8](data))
        default: return nil
        }
    }

    /// `fields` as a header list in name order, as `Session` sends a `URLRequest`'s, without `omitted` (any case).
    static func fields(_ fields: [String: String]?, omitting omitted: String?) -> HTTPFields {
        var headers = HTTPFields()
        if let fields, !fields.isEmpty {
            headers.reserveCapacity(fields.count + 2)
            for (name, value) in fields.sorted(by: { $0.key < $1.key })
            where omitted.map({ !name.equalsIgnoringASCIICase($0) }) ?? true {
                headers.add(name: name, value: value)
            }
        }
        return headers
    }
}
