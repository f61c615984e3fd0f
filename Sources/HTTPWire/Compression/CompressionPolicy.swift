/// Decides whether a response body should be compressed, and rewrites the response head when it is.
///
/// A response is compressed only when all of these hold:
/// - the request has no `Range` field, and the status is not 1xx, 204, 206 or 304;
/// - the response has no `Content-Encoding` (even `identity`) and no `Content-Range`;
/// - the response does not say `Cache-Control: no-transform` (RFC 9110 §7.7);
/// - its media type is compressible (see `isCompressible(contentType:)`);
/// - its `Content-Length`, when known, is at least `minimumBytes` (a body of unknown length qualifies);
/// - the client accepts gzip or deflate (see `AcceptEncoding.negotiate`).
///
/// A HEAD request is decided as its GET would be, so that its answer carries the same fields (RFC 9110 §9.3.2): the
/// caller rewrites the head and sends no body.
package struct CompressionPolicy: Sendable, Hashable {
    /// Bodies shorter than this are sent as they are.
    package var minimumBytes: Int
    /// zlib level, 1...9. The default, 1, is nginx's `gzip_comp_level` default.
    package var level: Int32
    /// Codings offered, in order of preference.
    package var codings: [ContentCoding]
    /// Extra media types (lowercase, without parameters) to compress besides the built-in list.
    package var extraCompressibleTypes: Set<String>

    package init(
        minimumBytes: Int = 1024, level: Int32 = 1, codings: [ContentCoding] = [.gzip, .deflate],
        extraCompressibleTypes: Set<String> = []
    ) {
        self.minimumBytes = minimumBytes
        self.level = level
        self.codings = codings
        self.extraCompressibleTypes = extraCompressibleTypes
    }

    /// The outcome for one response.
    package enum Decision: Sendable, Hashable {
        /// Compress the body with this coding; apply `apply(_:to:)` to the head.
        case compress(ContentCoding)
        /// Send the body as it is. `varyOnAcceptEncoding` says the choice depended on `Accept-Encoding` (the
        /// response was eligible, the client did not accept a coding), so `Vary: Accept-Encoding` belongs on it.
        case identity(varyOnAcceptEncoding: Bool)
    }

    /// Decides for `response` to a request with `requestMethod` and `requestHeaders`.
    package func decide(requestMethod: HTTPMethod, requestHeaders: HTTPFields, response: HTTPResponseHead) -> Decision {
        guard isEligible(requestMethod: requestMethod, response: response),
            !requestHeaders.contains(name: "Range")
        else {
            return .identity(varyOnAcceptEncoding: false)
        }
        let accept = AcceptEncoding(headers: requestHeaders)
        if let coding = accept.negotiate(available: codings), coding != .identity {
            return .compress(coding)
        }
        return .identity(varyOnAcceptEncoding: true)
    }

    /// Whether the response could be compressed for some client (everything but the `Accept-Encoding` check).
    package func isEligible(requestMethod: HTTPMethod, response: HTTPResponseHead) -> Bool {
        let status = response.status
        if (100..<200).contains(status) || status == 204 || status == 206 || status == 304 { return false }
        let headers = response.headers
        if headers.contains(name: "Content-Encoding") || headers.contains(name: "Content-Range") { return false }
        if headers.containsToken("no-transform", in: .cacheControl) { return false }
        guard let type = headers.first(name: "Content-Type"), isCompressible(contentType: type) else { return false }
        let lengths = headers["Content-Length"]
        if let first = lengths.first {
            // An unparsable or conflicting length: leave the body alone.
            guard lengths.allSatisfy({ $0 == first }), let length = Int(first.trimmingCharacters()), length >= 0 else {
                return false
            }
            if length < minimumBytes { return false }
        }
        return true
    }

    /// Whether a `Content-Type` value names a compressible media type: `text/*` (except `text/event-stream`,
    /// which needs flushing per event), `application/json`, `application/javascript`, `application/xml`,
    /// any `+json` or `+xml` suffix, `image/svg+xml`, and `extraCompressibleTypes`.
    package func isCompressible(contentType: String) -> Bool {
        let mediaType =
            contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingHTTPWhitespace().lowercased() } ?? ""
        if mediaType.isEmpty { return false }
        if extraCompressibleTypes.contains(mediaType) { return true }
        if mediaType == "text/event-stream" { return false }
        if mediaType.hasPrefix("text/") { return mediaType.count > 5 }
        switch mediaType {
        case "application/json", "application/javascript", "application/xml", "image/svg+xml",
            "application/x-javascript", "text/javascript":
            return true
        default:
            return mediaType.hasSuffix("+json") || mediaType.hasSuffix("+xml")
        }
    }

    /// Rewrites `head` for a body compressed with `coding`: sets `Content-Encoding`, adds `Accept-Encoding` to
    /// `Vary` (unless already listed or `Vary: *`), removes `Content-Length` (the length changes) and turns a
    /// strong `ETag` into a weak one (the bytes differ from the identity representation).
    package func apply(_ coding: ContentCoding, to head: inout HTTPResponseHead) {
        head.headers.replaceOrAdd(name: "Content-Encoding", value: coding.rawValue)
        head.headers.remove(name: "Content-Length")
        CompressionPolicy.addVary(to: &head)
        if let etag = head.headers.first(name: "ETag"), etag.hasPrefix("\"") {
            head.headers.replaceOrAdd(name: "ETag", value: "W/" + etag)
        }
    }

    /// Adds `Accept-Encoding` to `Vary` unless it is already there or `Vary` is `*`; an existing `Vary` list is
    /// merged into one field (`Vary: Origin, Accept-Encoding`).
    package static func addVary(to head: inout HTTPResponseHead) {
        let tokens = head.headers.tokens(name: "Vary")
        if tokens.contains(where: { $0 == "*" || String($0).equalsIgnoringASCIICase("Accept-Encoding") }) { return }
        if tokens.isEmpty {
            head.headers.replaceOrAdd(name: "Vary", value: "Accept-Encoding")
        } else {
            head.headers.replaceOrAdd(
                name: "Vary", value: (tokens.map(String.init) + ["Accept-Encoding"]).joined(separator: ", "))
        }
    }
}

extension String {
    fileprivate func trimmingCharacters() -> Substring {
        Substring(self).trimmingHTTPWhitespace()
    }
}
