import Foundation
import HTTPClientCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Whether and how a `Session` follows HTTP redirects: Alamofire's `Redirector`.
///
/// Following is what URLSession does by default (and so Moya over Alamofire):
/// * `301`, `302`, `303`, `307` and `308` with a `Location` that resolves (relative to the current URL) to an
///   `http` or `https` URL are followed; any other status, or a missing or unusable `Location`, ends the chain
///   and the redirect response is the result.
/// * `303` turns any method but `GET` and `HEAD` into `GET`; `301` and `302` turn `POST` into `GET` (as
///   swift-corelibs-foundation and the Fetch standard do; other methods keep theirs). A request turned into `GET`
///   loses its body and the `Content-*` headers describing it. `307` and `308` keep the method and resend the
///   body (a file upload or multipart form is read again); a body given as an `httpBodyStream` cannot be
///   replayed, so such a `307`/`308` is returned as is.
/// * When a redirect leaves the current origin (scheme, host and port), `Authorization`, `Proxy-Authorization`
///   and `Cookie` are no longer sent, for the rest of the chain, from the request or from the session's headers.
/// * At most 20 redirects per request (the limit swift-corelibs-foundation uses, mirroring Darwin); the 21st
///   fails with `NSError(domain: NSURLErrorDomain, code: NSURLErrorHTTPTooManyRedirects)`.
/// * The response's `url` is the last URL of the chain; `Response.request` stays the request that was sent
///   first (as Alamofire's `response.request`). The request's `timeoutInterval` bounds the whole chain.
///
/// A proxy must pass redirects through: give its session `redirectHandler: .doNotFollow`.
public struct Redirector: Sendable {
    /// What to do with a redirect.
    public enum Behavior: Sendable {
        /// Follow it as URLSession does.
        case follow
        /// Return the redirect response itself.
        case doNotFollow
        /// Follow the request the closure returns (it receives the request `.follow` would send and the redirect
        /// response), or return the redirect response when it returns nil. Alamofire's closure also receives the
        /// `URLSessionTask`, which this transport does not have.
        case modify(@Sendable (_ request: URLRequest, _ response: HTTPURLResponse) -> URLRequest?)
    }

    /// Follows redirects (the default of `Session`).
    public static let follow = Redirector(behavior: .follow)
    /// Returns redirect responses to the caller.
    public static let doNotFollow = Redirector(behavior: .doNotFollow)

    /// How redirects are handled.
    public let behavior: Behavior

    /// Creates a redirector with the given behaviour.
    ///
    /// - Parameter behavior: What to do with each redirect.
    public init(behavior: Behavior) {
        self.behavior = behavior
    }

    /// The most redirects one request follows.
    static let maximumRedirects = 20

    /// The error a longer chain ends with, as URLSession reports it.
    static var tooManyRedirects: NSError {
        NSError(
            domain: NSURLErrorDomain, code: NSURLErrorHTTPTooManyRedirects,
            userInfo: [NSLocalizedDescriptionKey: "too many HTTP redirects"])
    }

    /// The next request of the chain after `response`, or nil when `response` is the result.
    /// - Throws: `tooManyRedirects` when the chain is longer than `maximumRedirects`.
    func nextHop(after response: HTTPURLResponse, location: String?, from hop: RedirectHop) throws -> RedirectHop? {
        guard RedirectHop.followedStatuses.contains(response.statusCode) else { return nil }
        if case .doNotFollow = behavior { return nil }
        guard let location, let current = hop.request.url,
            let target = URL(string: location, relativeTo: current)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
            target.host?.isEmpty == false,
            var next = hop.redirected(to: target, status: response.statusCode)
        else { return nil }
        guard hop.redirects < Redirector.maximumRedirects else { throw Redirector.tooManyRedirects }
        if case .modify(let modify) = behavior {
            guard let modified = modify(next.request, response) else { return nil }
            next.request = modified
            next.crossedOrigin =
                next.crossedOrigin || RedirectHop.origin(of: modified.url) != RedirectHop.origin(of: current)
            next.dropCredentialsIfCrossed()
        }
        return next
    }
}

/// One request of a redirect chain: what is sent, how the body is supplied, and what the chain did so far.
struct RedirectHop {
    /// The statuses that are followed.
    static let followedStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// Headers not sent once the chain has left an origin (lower case).
    static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]
    /// Headers that describe a body, dropped with it (lower case).
    static let bodyHeaders: Set<String> = [
        "content-type", "content-length", "content-encoding", "content-language",
        "content-location", "transfer-encoding"
    ]

    var request: URLRequest
    var upload: Session.Upload
    /// Redirects followed to reach this request.
    var redirects = 0
    /// Whether some redirect of the chain went to another origin.
    var crossedOrigin = false

    init(request: URLRequest, upload: Session.Upload) {
        self.request = request
        self.upload = upload
    }

    /// The transport request for this hop, without credential headers once the chain crossed an origin.
    func clientRequest(in session: Session) throws -> HTTPClientRequest {
        var clientRequest = try session.clientRequest(for: request, upload: upload)
        if crossedOrigin {
            for name in RedirectHop.credentialHeaders { clientRequest.headers.remove(name: name) }
        }
        return clientRequest
    }

    /// The hop after a `status` redirect to `url`, or nil when the body cannot be sent again.
    func redirected(to url: URL, status: Int) -> RedirectHop? {
        var next = self
        next.redirects += 1
        next.request.url = url
        let method = (request.httpMethod ?? "GET").uppercased()
        let becomesGET =
            (status == 303 && method != "GET" && method != "HEAD")
            || ((status == 301 || status == 302) && method == "POST")
        if becomesGET {
            next.request.httpMethod = "GET"
            next.request.httpBody = nil
            next.request.httpBodyStream = nil
            next.request.allHTTPHeaderFields = next.request.allHTTPHeaderFields?
                .filter { !RedirectHop.bodyHeaders.contains($0.key.lowercased()) }
            next.upload = .requestBody
        } else if case .requestBody = upload, request.httpBodyStream != nil {
            return nil
        }
        if RedirectHop.origin(of: url) != RedirectHop.origin(of: request.url) {
            next.crossedOrigin = true
        }
        next.dropCredentialsIfCrossed()
        return next
    }

    /// Removes the credential headers from the request once the chain crossed an origin.
    mutating func dropCredentialsIfCrossed() {
        guard crossedOrigin else { return }
        request.allHTTPHeaderFields = request.allHTTPHeaderFields?
            .filter { !RedirectHop.credentialHeaders.contains($0.key.lowercased()) }
    }

    /// Scheme, host (lower case) and port (explicit or the scheme's default).
    static func origin(of url: URL?) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }
}
