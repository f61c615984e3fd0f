import Foundation
import HTTPClientCore
import HTTPWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport a `MoyaProvider` sends requests with (Alamofire's `Session`): MoyaGateway's own HTTP client (no
/// URLSession, no Alamofire), plus the default headers added to every request (Alamofire's `httpAdditionalHeaders`).
///
/// A `URLRequest` built by an `Endpoint` is sent by the HTTP client over HTTP/1.1, or HTTP/2 where a TLS server
/// offers it; the response comes back as an `HTTPURLResponse` plus body, gzip and deflate bodies decoded. A request's
/// `timeoutInterval` becomes the exchange's deadline. Sessions made without a client of their own share one
/// process-wide client, so providers share its connection pools.
public final class Session: Sendable {

    /// The client requests go through.
    package let client: HTTPClient

    /// Headers added to every request unless the request sets the same name (compared case-insensitively).
    public let headers: [String: String]

    /// Kept for Alamofire compatibility; requests are always started by the provider.
    public let startRequestsImmediately: Bool

    /// Whether redirects are followed (see `Redirector`); `.follow` unless the session was created otherwise.
    public let redirectHandler: Redirector

    /// Adapts every request before it is sent (see ``RequestInterceptor``); a session with one sends through the
    /// `URLRequest` path.
    public let interceptor: RequestInterceptor?

    /// The process-wide client used by sessions created without one, so providers share connection pools.
    package static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = HTTPClient.Configuration.Decompression()
        return HTTPClient(configuration: configuration)
    }()

    /// A session on the process-wide HTTP client with the default headers, following redirects.
    public static let `default` = Session()

    /// Creates a session on the process-wide HTTP client.
    ///
    /// - Parameters:
    ///   - headers: Headers added to every request; defaults to ``defaultHTTPHeaders``.
    ///   - startRequestsImmediately: Accepted for Alamofire compatibility; the provider starts every request.
    ///   - interceptor: Adapts every request before it is sent, as Alamofire's (see ``RequestInterceptor``).
    ///   - redirectHandler: `.follow` (URLSession's behaviour) or `.doNotFollow` (for a proxy), as Alamofire's.
    public convenience init(
        headers: [String: String] = Session.defaultHTTPHeaders,
        startRequestsImmediately: Bool = true,
        interceptor: RequestInterceptor? = nil,
        redirectHandler: Redirector = .follow
    ) {
        self.init(
            client: Session.sharedClient, headers: headers, startRequestsImmediately: startRequestsImmediately,
            interceptor: interceptor, redirectHandler: redirectHandler)
    }

    /// Creates a session on `client` (the gateway's per-upstream clients, tests' own clients).
    /// - Parameters:
    ///   - client: the HTTP client.
    ///   - headers: headers added to every request; defaults to `Session.defaultHTTPHeaders`.
    ///   - startRequestsImmediately: accepted for Alamofire compatibility.
    ///   - interceptor: adapts every request before it is sent, as Alamofire's.
    ///   - redirectHandler: `.follow` (URLSession's behaviour) or `.doNotFollow` (for a proxy), as Alamofire's.
    package init(
        client: HTTPClient,
        headers: [String: String] = Session.defaultHTTPHeaders,
        startRequestsImmediately: Bool = true,
        interceptor: RequestInterceptor? = nil,
        redirectHandler: Redirector = .follow
    ) {
        self.client = client
        self.headers = headers
        self.startRequestsImmediately = startRequestsImmediately
        self.interceptor = interceptor
        self.redirectHandler = redirectHandler
    }

    // MARK: - Default headers

    /// `Accept-Encoding`, `Accept-Language` and `User-Agent`, as Alamofire's `HTTPHeaders.default`.
    ///
    /// `Accept-Encoding` lists only what the transport decodes (`gzip;q=1.0, deflate;q=0.9`): Alamofire also offers
    /// `br`, which the zlib-based client cannot decode.
    public static var defaultHTTPHeaders: [String: String] {
        [
            "Accept-Encoding": defaultAcceptEncoding, "Accept-Language": defaultAcceptLanguage,
            "User-Agent": defaultUserAgent
        ]
    }

    /// `gzip;q=1.0, deflate;q=0.9`: the encodings the HTTP client decodes.
    public static let defaultAcceptEncoding = ["gzip", "deflate"].qualityEncoded()

    /// The preferred languages, at most six, with decreasing quality (`en-US;q=1.0, fr;q=0.9`).
    public static var defaultAcceptLanguage: String {
        let languages = Locale.preferredLanguages.prefix(6)
        return (languages.isEmpty ? ["en"] : Array(languages)).qualityEncoded()
    }

    /// `<executable>/<version> (<bundle>; build:<build>; Linux <x.y.z>) Moya/<version>`.
    public static var defaultUserAgent: String {
        let info = Bundle.main.infoDictionary
        let executable = (info?["CFBundleExecutable"] as? String) ?? ProcessInfo.processInfo.processName
        let bundle = (info?["CFBundleIdentifier"] as? String) ?? "Unknown"
        let appVersion = (info?["CFBundleShortVersionString"] as? String) ?? "Unknown"
        let appBuild = (info?["CFBundleVersion"] as? String) ?? "Unknown"
        let version = ProcessInfo.processInfo.operatingSystemVersion
        #if os(Linux)
        let osName = "Linux"
        #elseif os(macOS)
        let osName = "macOS"
        #else
        let osName = "Unknown"
        #endif
        let osNameVersion = "\(osName) \(version.majorVersion).\(version.minorVersion).\(version.patchVersion)"
        return
            "\(executable)/\(appVersion) (\(bundle); build:\(appBuild); \(osNameVersion)) Moya/\(MoyaModule.compatibleMoyaVersion)"
    }

    // MARK: - Transport

    /// What is uploaded as the request body.
    enum Upload {
        /// The request's `httpBody`, if any.
        case requestBody
        /// A file streamed from disk.
        case file(URL)
        /// A multipart form, encoded while it is sent (file parts streamed from disk).
        case multipart(MultipartFormData)
    }

    /// The headers actually sent: the session's, then the request's (request wins, case-insensitively).
    func mergedHeaders(for request: URLRequest) -> HTTPFields {
        var result = HTTPFields()
        let requestHeaders = request.allHTTPHeaderFields ?? [:]
        for (name, value) in headers.sorted(by: { $0.key < $1.key })
        where !requestHeaders.keys.contains(where: { $0.equalsIgnoringASCIICase(name) }) {
            result.add(name: name, value: value)
        }
        for (name, value) in requestHeaders.sorted(by: { $0.key < $1.key }) {
            result.add(name: name, value: value)
        }
        return result
    }

    /// Converts a `URLRequest` into the transport's request.
    /// - Throws: `MoyaRequestError.unsupportedURL` for anything but an absolute http(s) URL; multipart encoding errors.
    func clientRequest(for request: URLRequest, upload: Upload) throws -> HTTPClientRequest {
        guard let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw MoyaRequestError.unsupportedURL(request.url?.absoluteString ?? "")
        }
        var headers = mergedHeaders(for: request)
        let body: HTTPClientRequest.Body
        switch upload {
        case .requestBody:
            if let stream = request.httpBodyStream {
                let data = try RequestMultipartFormData.readAll(stream, bufferSize: 64 * 1024)
                body = .bytes([UInt8](data))
            } else if let data = request.httpBody {
                body = .bytes([UInt8](data))
            } else {
                body = .none
            }
        case .file(let fileURL):
            guard fileURL.isFileURL else {
                throw RequestMultipartFormData.EncodingError.bodyPartURLInvalid(url: fileURL)
            }
            body = .file(path: fileURL.path)
        case .multipart(let form):
            let encoder = RequestMultipartFormData(fileManager: form.fileManager, boundary: form.boundary)
            encoder.applyMoyaMultipartFormData(form)
            let (stream, length) = try encoder.makeBodyStream()
            headers.replaceOrAdd(name: "Content-Type", value: encoder.contentType)
            body = .stream(stream, length: length)
        }
        do {
            return try HTTPClientRequest(
                method: HTTPMethod(rawValue: request.httpMethod ?? "GET"), url: url.absoluteString,
                headers: headers, body: body)
        } catch {
            throw MoyaRequestError.unsupportedURL(url.absoluteString)
        }
    }

    /// Sends `request`, following redirects as `redirectHandler` says, and returns the last response head (its
    /// `HTTPURLResponse`, whose `url` is the last URL of the chain, is made lazily) and its body.
    ///
    /// With `streamingBodiesAbove`, the response is received as a stream: a body whose `Content-Length` is at most that
    /// many bytes is still collected (returned as `Data`), a longer one or one of unknown length stays a stream in
    /// the returned head (`TransportResponse.streamed`) and the `Data` is empty. Streamed bodies are not decompressed.
    func send(
        _ request: URLRequest, upload: Upload, progress: HTTPClientProgress,
        streamingBodiesAbove threshold: Int? = nil
    ) async throws -> (TransportResponse, Data) {
        let deadline = TransportErrors.timeout(of: request).map { ContinuousClock.now + $0 }
        var hop = RedirectHop(request: request, upload: upload)
        while true {
            let transport = try await exchange(
                try hop.clientRequest(in: self), deadline: deadline, timeout: nil,
                progress: progress, streamingBodiesAbove: threshold,
                url: .url(hop.request.url))
            // Only a redirect status needs the HTTPURLResponse here (for `Redirector.modify`).
            guard RedirectHop.followedStatuses.contains(transport.status),
                let httpResponse = transport.makeHTTPURLResponse(),
                let next = try redirectHandler.nextHop(
                    after: httpResponse, location: transport.headers.first(name: "Location"),
                    from: hop)
            else {
                return (transport, transport.body.isEmpty ? Data() : Data(sharing: transport.body))
            }
            hop = next
        }
    }

    /// Sends a transport request as it is (plus the session's headers it does not set); redirects are returned, not
    /// followed. `streamingBodiesAbove` as in `send(_:upload:progress:streamingBodiesAbove:)`. Inlined into its one
    /// caller: out of line, its frame is one more task allocation per request.
    @inline(__always)
    func send(
        _ request: TransportRequest, progress: HTTPClientProgress,
        streamingBodiesAbove threshold: Int? = nil
    ) async throws -> TransportResponse {
        // Without session headers the request goes to the client as it is, borrowed: no copy of it is made here (the
        // client makes the one its exchange keeps).
        guard headers.isEmpty else {
            return try await exchange(
                clientRequest(for: request), deadline: request.deadline, timeout: request.timeout,
                progress: progress, streamingBodiesAbove: threshold,
                url: .transport(request.http.origin, request.http.target))
        }
        return try await exchange(
            request.http, deadline: request.deadline, timeout: request.timeout,
            progress: progress, streamingBodiesAbove: threshold,
            url: .transport(request.http.origin, request.http.target))
    }

    /// The client's request for `request` (plus the session's headers it does not set): the synchronous part of
    /// ``send(_:progress:streamingBodiesAbove:)``, kept out of the async function, whose every local costs a task
    /// allocation. The request's `timeout` and `deadline` go to the client as they are: it bounds the exchange by the
    /// earlier of the two on its own clock.
    func clientRequest(for request: TransportRequest) -> HTTPClientRequest {
        var clientRequest = request.http
        for (name, value) in headers.sorted(by: { $0.key < $1.key })
        where !clientRequest.headers.contains(name: name) {
            clientRequest.headers.add(name: name, value: value)
        }
        return clientRequest
    }

    /// One exchange with the client: the body collected, or (with a threshold) streamed when it is longer.
    private func exchange(
        _ request: HTTPClientRequest, deadline: ContinuousClock.Instant?, timeout: Duration?,
        progress: HTTPClientProgress, streamingBodiesAbove threshold: Int?,
        url: ResponseURL
    ) async throws -> TransportResponse {
        guard let threshold else {
            let response = try await client.execute(request, deadline: deadline, timeout: timeout, progress: progress)
            return TransportResponse(response, url: url)
        }
        return TransportResponse(
            try await client.execute(
                request, streamingBodiesLongerThan: threshold, deadline: deadline, timeout: timeout,
                progress: progress),
            url: url)
    }

    /// An `HTTPURLResponse` for a transport response; repeated header fields are joined with `, `.
    static func httpURLResponse(for response: HTTPClientResponse, url: URL?) -> HTTPURLResponse? {
        TransportResponse(response, url: .url(url)).makeHTTPURLResponse()
    }

    /// Writes a downloaded body to a temporary file, then moves it where `destination` says.
    static func storeDownload(
        _ data: Data, response: HTTPURLResponse, destination: DownloadDestination,
        fileManager: FileManager = .default
    ) throws {
        let temporaryURL = fileManager.temporaryDirectory.appendingPathComponent("Moya_\(UUID().uuidString).tmp")
        try data.write(to: temporaryURL)
        let (destinationURL, options) = destination(temporaryURL, response)
        do {
            if options.contains(.removePreviousFile), fileManager.fileExists(atPath: destinationURL.path) {
                try fileManager.removeItem(at: destinationURL)
            }
            if options.contains(.createIntermediateDirectories) {
                try fileManager.createDirectory(
                    at: destinationURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            try fileManager.moveItem(at: temporaryURL, to: destinationURL)
        } catch {
            try? fileManager.removeItem(at: temporaryURL)
            throw error
        }
    }
}

extension Array where Element == String {
    func qualityEncoded() -> String {
        enumerated().map { index, encoding in
            let quality = 1.0 - (Double(index) * 0.1)
            return "\(encoding);q=\(quality)"
        }.joined(separator: ", ")
    }
}

extension Data {
    /// A `Data` over the array's own storage (kept alive by the `Data`): the transport's body becomes `Response.data`
    /// without a copy, and stays one buffer for callers that read it as an array (`Response.transportBody`).
    init(sharing bytes: [UInt8]) {
        guard bytes.count > 16, let base = bytes.withUnsafeBufferPointer({ $0.baseAddress }) else {
            self.init(bytes)
            return
        }
        self.init(
            bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count,
            deallocator: .custom { _, _ in withExtendedLifetime(bytes) {} })
    }
}
