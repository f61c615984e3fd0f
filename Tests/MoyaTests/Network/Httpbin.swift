import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An httpbin-like loopback server on our `HTTPServer`, for the network tests.
///
/// Routes (every request is counted per target, see `hits(_:)`):
/// * `/get`, `/post`, `/anything/...`, `/headers`: echo JSON `{method, target, path, query, headers, body, bodyLength,
///   contentType}` (`body` is the body as UTF-8, `headers` lower-cased names → values joined with `, `).
/// * `/status/{n}`: status `n`, empty body.
/// * `/delay/{ms}`: answers `{"delay": ms}` after `ms` milliseconds.
/// * `/bytes/{n}`: `n` bytes (`i % 251`) with `Content-Length`.
/// * `/upload`: `{"bytes": <body length>}`.
/// * `/basic-auth/{user}/{pass}`: 401 with `WWW-Authenticate: Basic realm="x"` unless the Basic credentials match.
/// * `/digest-auth/{user}/{pass}`: 401 with a Digest MD5 `qop="auth"` challenge unless the Digest response matches.
/// * `/flaky/{key}/{n}`: 503 for the first `n` requests with that key, then 200.
/// * `/fixed`: 200 `ok` with fixed headers (a fixed `Date`), for exact log lines.
/// * `/redirect/{n}`: 302 to `{n-1}` (a path-relative `Location`, so `/redirect/{n-1}`), and `/redirect/1` to `/get`.
/// * `/absolute-redirect/{n}`: the same with absolute `http://127.0.0.1:<port>/...` locations.
/// * `/redirect-to?url=<u>&status_code=<s>`: status `s` (default 302) with `Location: u`; `url` absent means no
///   `Location` header.
/// * `/loop`: 302 to itself.
/// * `/bearer`: 401 with `WWW-Authenticate: Bearer` unless `Authorization` is `Bearer <validToken>`; then
///   `{"token": <token>}`.
final class Httpbin: HTTPServerHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    private var bodies: [String: [UInt8]] = [:]
    private var requestHeaders: [String: HTTPFields] = [:]
    private var started: [String] = []
    private var methods: [String: String] = [:]
    private var bearer = "initial"
    private(set) var server: HTTPServer?

    /// The server's port (valid after `start`).
    private(set) var port = 0

    /// `http://127.0.0.1:<port>`.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static func start() async throws -> Httpbin {
        let bin = Httpbin()
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: bin)
        try await server.start()
        bin.server = server
        bin.port = server.localAddresses[0].port
        return bin
    }

    func shutdown() async {
        await server?.shutdown(timeout: .seconds(1))
    }

    /// How many requests arrived for `target` (path and query as sent).
    func hits(_ target: String) -> Int { lock.withLock { counts[target] ?? 0 } }

    /// The raw body of the last request for `target`.
    func lastBody(_ target: String) -> [UInt8]? { lock.withLock { bodies[target] } }

    /// The headers of the last request for `target`.
    func lastHeaders(_ target: String) -> HTTPFields? { lock.withLock { requestHeaders[target] } }

    /// The method of the last request for `target`.
    func lastMethod(_ target: String) -> String? { lock.withLock { methods[target] } }

    /// The token `/bearer` accepts.
    var validToken: String {
        get { lock.withLock { bearer } }
        set { lock.withLock { bearer = newValue } }
    }

    /// Targets whose handling has started, in order.
    var startedTargets: [String] { lock.withLock { started } }

    // MARK: - Handling

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let target = request.head.target
        let body = (try? await request.body.collect(upTo: 64 << 20)) ?? []
        let count: Int = lock.withLock {
            counts[target, default: 0] += 1
            bodies[target] = body
            requestHeaders[target] = request.head.headers
            started.append(target)
            methods[target] = request.head.method.rawValue
            return counts[target]!
        }
        let path = String(request.head.path)
        let parts = path.split(separator: "/").map(String.init)
        switch parts.first ?? "" {
        case "get", "post", "anything", "headers":
            return json(echo(request, body: body))
        case "status":
            return HTTPServerResponse(status: Int(parts.dropFirst().first ?? "") ?? 500, body: [])
        case "delay":
            let ms = Int(parts.dropFirst().first ?? "") ?? 0
            try? await _Concurrency.Task.sleep(for: .milliseconds(ms))
            return json(["delay": ms])
        case "bytes":
            let n = Int(parts.dropFirst().first ?? "") ?? 0
            var headers = HTTPFields()
            headers.add(name: "Content-Type", value: "application/octet-stream")
            headers.add(name: "Content-Length", value: String(n))
            return HTTPServerResponse(status: 200, headers: headers, body: Httpbin.bytes(n))
        case "upload":
            return json(["bytes": body.count])
        case "basic-auth" where parts.count == 3:
            let expected = "Basic " + Data("\(parts[1]):\(parts[2])".utf8).base64EncodedString()
            if request.head.headers.first(name: "Authorization") == expected {
                return json(["authenticated": true, "user": parts[1]] as [String: Any])
            }
            var headers = HTTPFields()
            headers.add(name: "WWW-Authenticate", value: "Basic realm=\"x\"")
            return HTTPServerResponse(status: 401, headers: headers, body: [])
        case "digest-auth" where parts.count == 3:
            return digest(request, user: parts[1], password: parts[2])
        case "flaky" where parts.count == 3:
            let failures = Int(parts[2]) ?? 0
            return count <= failures ? HTTPServerResponse(status: 503, body: []) : json(["attempt": count])
        case "fixed":
            var headers = HTTPFields()
            headers.add(name: "Content-Type", value: "text/plain")
            headers.add(name: "Date", value: "Mon, 01 Jan 2024 00:00:00 GMT")
            headers.add(name: "Set-Cookie", value: "session=secret")
            return HTTPServerResponse(status: 200, headers: headers, body: Array("ok".utf8))
        case "redirect" where parts.count == 2, "absolute-redirect" where parts.count == 2:
            let n = Int(parts[1]) ?? 1
            let prefix = parts[0] == "absolute-redirect" ? baseURL.absoluteString : ""
            let location =
                n <= 1 ? prefix + "/get" : (prefix.isEmpty ? String(n - 1) : "\(prefix)/\(parts[0])/\(n - 1)")
            return redirect(302, to: location)
        case "loop":
            return redirect(302, to: "/loop")
        case "redirect-to":
            let items = URLComponents(string: "http://h" + target)?.queryItems ?? []
            let status = items.first { $0.name == "status_code" }?.value.flatMap { Int($0) } ?? 302
            return redirect(status, to: items.first { $0.name == "url" }?.value)
        case "bearer":
            let token = validToken
            if request.head.headers.first(name: "Authorization") == "Bearer \(token)" { return json(["token": token]) }
            var headers = HTTPFields()
            headers.add(name: "WWW-Authenticate", value: "Bearer")
            return HTTPServerResponse(status: 401, headers: headers, body: [])
        default:
            return HTTPServerResponse(status: 404, body: Array("no route \(path)".utf8))
        }
    }

    /// `n` bytes `i % 251` (sliced from one precomputed buffer: building them per request is slow in debug builds).
    static func bytes(_ n: Int) -> [UInt8] {
        n <= pattern.count ? Array(pattern[0..<n]) : (0..<n).map { UInt8($0 % 251) }
    }

    private static let pattern: [UInt8] = (0..<(2 << 20)).map { UInt8($0 % 251) }

    private func echo(_ request: HTTPServerRequest, body: [UInt8]) -> [String: Any] {
        var headers: [String: String] = [:]
        for field in request.head.headers {
            let key = field.name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + field.value } ?? field.value
        }
        var result: [String: Any] = [
            "method": request.head.method.rawValue,
            "target": request.head.target,
            "path": String(request.head.path),
            "headers": headers,
            "body": String(decoding: body, as: UTF8.self),
            "bodyLength": body.count
        ]
        if let query = request.head.query { result["query"] = String(query) }
        if let contentType = request.head.headers.first(name: "Content-Type") { result["contentType"] = contentType }
        return result
    }

    private func redirect(_ status: Int, to location: String?) -> HTTPServerResponse {
        var headers = HTTPFields()
        if let location { headers.add(name: "Location", value: location) }
        return HTTPServerResponse(status: status, headers: headers, body: Array("redirect".utf8))
    }

    private func json(_ object: [String: Any], status: Int = 200) -> HTTPServerResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var headers = HTTPFields()
        headers.add(name: "Content-Type", value: "application/json")
        return HTTPServerResponse(status: status, headers: headers, body: [UInt8](data))
    }

    static let digestNonce = "dcd98b7102dd2f0e8b11d0f600bfb0c093"

    /// Checks a Digest MD5 `qop=auth` answer (RFC 7616), with the request's method and target as `uri`.
    private func digest(_ request: HTTPServerRequest, user: String, password: String) -> HTTPServerResponse {
        let realm = "x"
        if let header = request.head.headers.first(name: "Authorization"), header.hasPrefix("Digest ") {
            let parameters = AuthenticationChallenge.parseChallenges(header).first?.parameters ?? [:]
            let ha1 = MD5.hex("\(user):\(realm):\(password)")
            let ha2 = MD5.hex("\(request.head.method.rawValue):\(parameters["uri"] ?? "")")
            let expected = MD5.hex(
                "\(ha1):\(Httpbin.digestNonce):\(parameters["nc"] ?? ""):\(parameters["cnonce"] ?? ""):auth:\(ha2)")
            if parameters["username"] == user, parameters["uri"] == request.head.target,
                parameters["response"] == expected
            {
                return json(["authenticated": true, "user": user] as [String: Any])
            }
        }
        var headers = HTTPFields()
        headers.add(
            name: "WWW-Authenticate",
            value:
                "Digest realm=\"\(realm)\", qop=\"auth\", nonce=\"\(Httpbin.digestNonce)\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""
        )
        return HTTPServerResponse(status: 401, headers: headers, body: [])
    }
}

/// Starts an `Httpbin`, runs `body`, and shuts the server down afterwards (also when `body` throws), so the server
/// lives for the whole test.
func withHttpbin<T>(_ body: (Httpbin) async throws -> T) async throws -> T {
    let bin = try await Httpbin.start()
    do {
        let result = try await body(bin)
        await bin.shutdown()
        return result
    } catch {
        await bin.shutdown()
        throw error
    }
}

/// A target aimed at the httpbin server; every property is set by the test.
struct BinTarget: TargetType, AccessTokenAuthorizable {
    var baseURL: URL
    var path: String
    var method: Moya.Method = .get
    var task: Moya.Task = .requestPlain
    var headers: [String: String]? = nil
    var validationType: ValidationType = .none
    var authorizationType: AuthorizationType? = nil

    init(
        _ bin: Httpbin, _ path: String, method: Moya.Method = .get, task: Moya.Task = .requestPlain,
        headers: [String: String]? = nil, validationType: ValidationType = .none
    ) {
        self.baseURL = bin.baseURL
        self.path = path
        self.method = method
        self.task = task
        self.headers = headers
        self.validationType = validationType
    }
}

/// What `/get`-style routes echo.
struct Echo: Decodable, Equatable {
    var method: String
    var target: String
    var path: String
    var query: String?
    var headers: [String: String]
    var body: String
    var bodyLength: Int
    var contentType: String?
}

/// A provider on a fresh `HTTPClient` with fixed session headers (no locale/user-agent noise).
func binProvider<T: TargetType>(
    _: T.Type = BinTarget.self, plugins: [PluginType] = [], trackInflights: Bool = false,
    headers: [String: String] = ["X-Session": "s"]
) -> MoyaProvider<T> {
    MoyaProvider<T>(
        session: Session(client: HTTPClient(), headers: headers), plugins: plugins, trackInflights: trackInflights)
}

extension MoyaProvider {
    /// The completion-handler form, awaited: the result and the token returned by `request`.
    func requestWithHandler(_ target: Target, progress: ProgressBlock? = nil) async -> Result<Moya.Response, MoyaError>
    {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<Moya.Response, MoyaError>, Never>) in
            let once = ResumeOnce(continuation)
            self.request(target, progress: progress) { result in once.resume(result) }
        }
    }
}

extension Result where Success == Moya.Response, Failure == MoyaError {
    /// The decoded echo of a successful result.
    func echo() throws -> Echo {
        try get().map(Echo.self)
    }

    /// The failure's `localizedDescription`.
    var failureDescription: String? {
        if case .failure(let error) = self { return error.localizedDescription }
        return nil
    }
}

/// A port with nothing listening: bound by a server that is then shut down.
func closedPort() async throws -> Int {
    let bin = try await Httpbin.start()
    let port = bin.port
    await bin.shutdown()
    return port
}
