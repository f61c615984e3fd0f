import Foundation
import HTTPClientCore
import HTTPWire
import Locking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response head as the transport received it: status, version, header fields, timings and the request URL. Converting it
/// into an `HTTPURLResponse` is deferred to the first caller that asks (see `ResponseHead`). A streamed response also
/// holds the exchange whose body is still arriving (dropping it aborts that body).
struct TransportResponse: @unchecked Sendable {
    let status: Int
    let version: HTTPVersion
    let headers: HTTPFields
    let timings: HTTPClientTimings
    let url: ResponseURL
    let streamed: HTTPClientStreamingResponse?
    /// The collected body as the client delivered it (empty for a streamed one): the same bytes as the `Response`'s
    /// `data`, for a caller that wants them as an array without copying them again.
    let body: [UInt8]

    init(_ response: HTTPClientResponse, url: ResponseURL) {
        self.init(
            status: response.status, version: response.head.version, headers: response.headers,
            timings: response.timings, url: url, streamed: nil, body: response.body)
    }

    init(streaming response: HTTPClientStreamingResponse, url: ResponseURL) {
        self.init(
            status: response.status, version: response.head.version, headers: response.headers,
            timings: response.timings, url: url, streamed: response, body: [])
    }

    /// A response the client collected, or returned at its head with the body streamed.
    init(_ response: consuming HTTPClientResponseOrStream, url: ResponseURL) {
        switch consume response {
        case .collected(let collected): self.init(collected, url: url)
        case .streamed(let streamed): self.init(streaming: streamed, url: url)
        }
    }

    private init(
        status: Int, version: HTTPVersion, headers: HTTPFields, timings: HTTPClientTimings,
        url: ResponseURL, streamed: HTTPClientStreamingResponse?, body: [UInt8]
    ) {
        self.status = status
        self.version = version
        self.headers = headers
        self.timings = timings
        self.url = url
        self.streamed = streamed
        self.body = body
    }

    /// The `HTTPURLResponse` Moya users see; repeated header fields are joined with `, `.
    func makeHTTPURLResponse() -> HTTPURLResponse? {
        var fields: [String: String] = [:]
        var names: [String: String] = [:]
        for field in headers {
            let key = field.name.lowercased()
            let name = names[key] ?? field.name
            names[key] = name
            if let existing = fields[name] {
                fields[name] = existing + ", " + field.value
            } else {
                fields[name] = field.value
            }
        }
        return HTTPURLResponse(
            url: url.url ?? URL(fileURLWithPath: "/"), statusCode: status, httpVersion: "HTTP/1.1",
            headerFields: fields)
    }
}

/// The URL a response came from: a `URL` at hand, or the request's URL string, parsed only when an `HTTPURLResponse`
/// is made.
enum ResponseURL: @unchecked Sendable {
    case url(URL?)
    /// The request's origin and request-target.
    case transport(HTTPOrigin, String)

    var url: URL? {
        switch self {
        case .url(let url): return url
        case .transport(let origin, let target): return URL(string: origin.description + target)
        }
    }
}

/// The head of a `Response` that came over the network: the transport's response, whose `HTTPURLResponse` is built
/// once, on first use, under a lock.
final class ResponseHead: @unchecked Sendable {
    let transport: TransportResponse
    /// The `HTTPURLResponse` and the collected body as `Data`, each once made; one inline lock, as a response is read
    /// from any thread.
    private let made: Locked<MadeHead>

    init(transport: TransportResponse) {
        self.transport = transport
        self.made = Locked(MadeHead())
    }

    /// The collected body as `Data`, made on first use; it shares the transport's bytes rather than copying them.
    var data: Data {
        made.withLock { made in
            if let data = made.data { return data }
            let data = transport.body.isEmpty ? Data() : Data(sharing: transport.body)
            made.data = data
            return data
        }
    }

    var response: HTTPURLResponse? {
        made.withLock { made in
            if made.response == nil { made.response = UncheckedSendable(transport.makeHTTPURLResponse()) }
            return made.response
        }?.value
    }
}

/// What a ``ResponseHead`` makes on first use, behind its lock.
private struct MadeHead: @unchecked Sendable {
    var response: UncheckedSendable<HTTPURLResponse?>?
    var data: Data?
}
