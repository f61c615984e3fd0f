import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Logging
import NetCore

/// The whole gateway configuration file (`Configuration/gateway.yaml`), validated and with defaults applied.
///
/// Produced only by ``ConfigLoader``; every value here has passed the schema checks described in
/// `docs/configuration.md`. Relative file paths (TLS files, `ca_file`, stub `body_file`) are already resolved against the
/// configuration file's directory.
package struct GatewayConfig: Sendable, Equatable {
    /// The path of the file this configuration was loaded from, as given to the loader.
    package var sourcePath: String
    package var server: ServerConfig
    package var admin: AdminConfig
    package var logging: LoggingConfig
    /// Who may call the gateway; `nil` when the file has no `clients` section (everyone may).
    package var clients: ClientsConfig?
    /// Upstreams in declaration order; names are unique.
    package var upstreams: [UpstreamConfig]
    /// Routes in declaration order (the router orders them by precedence); names are unique.
    package var routes: [RouteConfig]
    /// `reload`: reloading when the files change.
    package var reload = ReloadConfig()

    package init(sourcePath: String, server: ServerConfig = ServerConfig(), admin: AdminConfig = AdminConfig(),
                logging: LoggingConfig = LoggingConfig(), clients: ClientsConfig? = nil,
                upstreams: [UpstreamConfig] = [], routes: [RouteConfig] = []) {
        self.sourcePath = sourcePath
        self.server = server
        self.admin = admin
        self.logging = logging
        self.clients = clients
        self.upstreams = upstreams
        self.routes = routes
    }

    /// The upstream called `name`, if declared.
    package func upstream(named name: String) -> UpstreamConfig? {
        upstreams.first { $0.name == name }
    }
}

/// A secret string from the configuration (token, password, API key). Its description never shows the value, so
/// printing or logging a config value cannot leak it.
package struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself. Use it only to put it on the wire.
    package let value: String

    package init(_ value: String) { self.value = value }

    package var description: String { "[REDACTED]" }
    package var debugDescription: String { "Secret([REDACTED])" }
}

/// A listening address: `host:port`, or `[v6addr]:port` for IPv6.
package struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host without brackets (`127.0.0.1`, `::1`, `0.0.0.0`, `localhost`).
    package var host: String
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Whether the host is an IPv6 literal (contains `:`).
    package var isIPv6: Bool { host.contains(":") }

    /// `host:port`, with brackets around IPv6 hosts.
    package var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The socket address (`localhost` is 127.0.0.1).
    package var socketAddress: SocketAddress? {
        SocketAddress(numericHost: host == "localhost" ? "127.0.0.1" : host, port: port)
    }

    /// Parses `host:port` or `[v6]:port`; `nil` when malformed (port must be 0...65535; 0 = any free port) or when the
    /// host is neither a numeric address nor `localhost` (listeners bind without name resolution).
    package static func parse(_ text: String) -> ListenAddress? {
        guard let address = split(text),
              address.host == "localhost" || SocketAddress(numericHost: address.host, port: address.port) != nil
        else { return nil }
        return address
    }

    /// `host:port` or `[v6]:port` taken apart, the host a name or a numeric address (not checked further); port
    /// 0...65535.
    static func split(_ text: String) -> ListenAddress? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard !host.isEmpty, host.contains(":"),
                  host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" }) else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.isEmpty, !host.contains(":"),
                  host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
            else { return nil }
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portText), port <= 65535 else { return nil }
        return ListenAddress(host: String(host), port: port)
    }
}

/// One of an upstream's `servers`: a numeric address, `localhost` (127.0.0.1) or a host name, and a port; the
/// client's own type, which resolves it.
package typealias UpstreamServer = HTTPClient.Configuration.Server

extension UpstreamServer {
    /// Parses `host:port` or `[v6]:port` (port 1...65535); `nil` when malformed, or when a name is not one (labels of
    /// letters, digits, `-` and `_`, 1 to 63 characters each, 253 in all).
    package static func parse(_ text: String) -> UpstreamServer? {
        guard let address = ListenAddress.split(text), address.port != 0 else { return nil }
        if address.host == "localhost" || SocketAddress(numericHost: address.host, port: address.port) != nil {
            return UpstreamServer(host: address.host, port: address.port)
        }
        let labels = address.host.split(separator: ".", omittingEmptySubsequences: false)
        guard !address.isIPv6, address.host.utf8.count <= 253,
              labels.allSatisfy({ (1...63).contains($0.utf8.count) && !$0.hasPrefix("-") && !$0.hasSuffix("-") }),
              labels.last?.allSatisfy(\.isNumber) == false
        else { return nil }
        return UpstreamServer(host: address.host.lowercased(), port: address.port)
    }
}

// MARK: - server

package struct ServerConfig: Sendable, Equatable {
    /// Cleartext listeners. Default `["127.0.0.1:8080"]`.
    package var listen: [ListenAddress] = [ListenAddress(host: "127.0.0.1", port: 8080)]
    /// Event loops; 0 = one per core. Default 0.
    package var threads: Int = 0
    /// h2 via ALPN on TLS listeners, h2c prior knowledge on cleartext ones. Default true.
    package var http2: Bool = true
    /// Each event loop sends the writes of a round, for all its connections, with one io_uring call when the kernel
    /// allows it (falling back to one `sendmsg` each otherwise); false: always one `sendmsg` each. Default true.
    package var ioUring: Bool = true
    /// Optional TLS listeners.
    package var tls: ServerTLSConfig?
    package var compression = CompressionConfig()
    package var limits = LimitsConfig()
    /// Peers whose `X-Forwarded-For` names the client (load balancers in front of the gateway), for the rate limit,
    /// `X-Real-IP` and the access log's `client_ip`. Default none.
    package var trustedProxies: [IPBlock] = []
    /// How proxied responses are buffered (`server.buffering`).
    package var buffering = BufferingConfig()

    package init() {}
}

package struct ServerTLSConfig: Sendable, Equatable {
    package var listen: [ListenAddress]
    /// PEM certificate chain, resolved path.
    package var certificate: String
    /// PEM private key, resolved path.
    package var privateKey: String

    package init(listen: [ListenAddress], certificate: String, privateKey: String) {
        self.listen = listen
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

package struct CompressionConfig: Sendable, Equatable {
    /// Default true.
    package var gzip: Bool = true
    /// Smallest body compressed. Default 1024.
    package var minBytes: Int = 1024

    package init() {}
}

package struct LimitsConfig: Sendable, Equatable {
    package var maxHeaderBytes: Int = 16384
    package var maxHeaders: Int = 100
    package var maxBodyBytes: Int64 = 10 * 1024 * 1024
    package var headerTimeout: Duration = .seconds(10)
    package var bodyTimeout: Duration = .seconds(30)
    package var idleTimeout: Duration = .seconds(60)
    /// Longest time a response write may make no progress (a client that stops reading) before the connection closes.
    package var sendTimeout: Duration = .seconds(60)
    package var maxConnections: Int = 10000
    package var drainTimeout: Duration = .seconds(30)
    /// Slowest pace (bytes per second) a client may take a response at while bytes wait for it; 0 disables.
    package var minSendRate: Int64 = 1024
    /// Slowest pace (bytes per second) a client may send a request body at while the gateway reads it; 0 disables.
    package var minReceiveRate: Int64 = 1024
    /// How far behind the minimum rates a transfer may fall before it is cut.
    package var minRateWindow: Duration = .seconds(10)
    /// HTTP/1.1 requests, or HTTP/2 streams, served on one client connection before it is closed (HTTP/2: a
    /// graceful GOAWAY); 0 = no limit. Default 1000.
    package var maxRequestsPerConnection: Int = 1000

    package init() {}

    /// These limits applied over the server's own defaults (the server has a few limits the file does not set).
    package var httpServerLimits: HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.maxHeaderBytes = maxHeaderBytes
        limits.maxHeaders = maxHeaders
        limits.maxBodyBytes = maxBodyBytes
        limits.headerTimeout = headerTimeout
        limits.bodyTimeout = bodyTimeout
        limits.idleTimeout = idleTimeout
        limits.sendTimeout = sendTimeout
        limits.maxConnections = maxConnections
        limits.minSendRate = minSendRate
        limits.minReceiveRate = minReceiveRate
        limits.minRateWindow = minRateWindow
        limits.maxRequestsPerConnection = maxRequestsPerConnection == 0 ? .max : maxRequestsPerConnection
        // A client that leaves before its answer abandons the upstream call (nginx's `proxy_ignore_client_abort off`).
        limits.abandonsRequestsOnClientEOF = true
        return limits
    }
}

// MARK: - admin, logging, clients

package struct AdminConfig: Sendable, Equatable {
    /// Default `127.0.0.1:9090`.
    package var listen = ListenAddress(host: "127.0.0.1", port: 9090)

    package init() {}
}

package struct LoggingConfig: Sendable, Equatable {
    package enum Format: String, Sendable, Equatable { case json, text }

    package enum Output: Sendable, Equatable {
        case stdout
        case stderr
        /// A file path, resolved against the config file's directory.
        case file(String)
    }

    /// The default `redact_headers` list.
    package static let defaultRedactHeaders = ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"]

    /// Default `.info`.
    package var level: Logger.Level = .info
    /// Default `.json`.
    package var format: Format = .json
    /// Default true.
    package var accessLog: Bool = true
    /// Default `.stdout`.
    package var output: Output = .stdout
    /// Header names whose values are replaced by `[REDACTED]` in every log line.
    package var redactHeaders: [String] = LoggingConfig.defaultRedactHeaders

    package init() {}
}

package struct ClientsConfig: Sendable, Equatable {
    package var apiKeys: APIKeysConfig?

    package init(apiKeys: APIKeysConfig? = nil) { self.apiKeys = apiKeys }
}

package struct APIKeysConfig: Sendable, Equatable {
    package struct Client: Sendable, Equatable {
        package var name: String
        package var key: Secret

        package init(name: String, key: Secret) {
            self.name = name
            self.key = key
        }
    }

    /// The request header that carries the key. Default `X-Api-Key`.
    package var header: String = "X-Api-Key"
    /// Clients in declaration order; names and keys are unique.
    package var keys: [Client] = []

    package init(header: String = "X-Api-Key", keys: [Client] = []) {
        self.header = header
        self.keys = keys
    }

    /// The client whose key is `key`, compared in constant time per key.
    package func client(forKey key: String) -> Client? {
        var found: Client?
        for client in keys where constantTimeEquals(client.key.value, key) { found = client }
        return found
    }
}

/// Compares two strings without an early exit on the first differing byte.
func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let a = Array(lhs.utf8)
    let b = Array(rhs.utf8)
    var difference: UInt8 = a.count == b.count ? 0 : 1
    let n = max(a.count, b.count)
    var index = 0
    while index < n {
        let x = index < a.count ? a[index] : 0
        let y = index < b.count ? b[index] : 0
        difference |= x ^ y
        index += 1
    }
    return difference == 0
}

// MARK: - upstreams

/// An upstream's `base_url`, split: origin and base path.
package struct UpstreamURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    package var scheme: String
    /// Host without brackets.
    package var host: String
    /// Explicit or default (80/443) port.
    package var port: Int
    /// Base path without a trailing slash; `""` for the root. Upstream targets are `basePath + routePath`.
    package var basePath: String

    package init(scheme: String, host: String, port: Int, basePath: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.basePath = basePath
    }

    package var isTLS: Bool { scheme == "https" }

    /// `scheme://host[:port]` (port omitted when it is the scheme's default).
    package var origin: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return isDefault ? "\(scheme)://\(hostPart)" : "\(scheme)://\(hostPart):\(port)"
    }

    /// The value for a `Host` header to this upstream.
    package var hostHeader: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return isDefault ? hostPart : "\(hostPart):\(port)"
    }

    package var description: String { origin + basePath }
}

package struct UpstreamConfig: Sendable, Equatable {
    package enum HTTP2Mode: String, Sendable, Equatable { case auto, always, never }

    /// `validation:` — Moya's `ValidationType`.
    package enum Validation: String, Sendable, Equatable {
        case none
        case success
        case successAndRedirect = "success_and_redirect"
    }

    package struct Timeout: Sendable, Equatable {
        /// Per attempt. Default 2s.
        package var connect: Duration = .seconds(2)
        /// Time to the response head, per attempt. Default 30s.
        package var response: Duration = .seconds(30)

        package init() {}
    }

    package struct Pool: Sendable, Equatable {
        /// Default 64.
        package var maxConnections: Int = 64
        /// Default `.auto` (h2 if ALPN offers it).
        package var http2: HTTP2Mode = .auto
        /// How long a request may wait for a connection (or an HTTP/2 stream) when the pool is at its limit before it
        /// fails with 503. Default 10 s.
        package var maxWait: Duration = .seconds(10)
        /// How long an idle connection to the upstream is kept for reuse. Default 60 s.
        package var idleTimeout: Duration = .seconds(60)
        /// Most requests waiting for a connection (or an HTTP/2 stream) per thread; more get 503 at once. Default
        /// 1024; 0 queues none.
        package var maxWaiting: Int = 1024
        /// Requests (HTTP/1.1) or streams (HTTP/2) sent on one connection before it is retired (it finishes what it
        /// carries and closes); 0 = no limit. Default 0.
        package var maxRequestsPerConnection: Int = 0
        /// `max_share`: while the pool is full and other callers wait, the most of it one caller (as `rate_limit` keys
        /// callers) may hold; its further requests wait behind the others'. Default 0.5; 1 turns it off.
        package var maxShare: Double = 0.5

        package init() {}
    }

    package struct TLS: Sendable, Equatable {
        /// Default true.
        package var verify: Bool = true
        /// Extra CA bundle, resolved path.
        package var caFile: String?

        package init() {}
    }

    package struct AccessToken: Sendable, Equatable {
        package enum Kind: Sendable, Equatable {
            case bearer
            case basic
            case custom(scheme: String)
        }

        package var type: Kind
        package var token: Secret

        package init(type: Kind, token: Secret) {
            self.type = type
            self.token = token
        }

        /// The `Authorization` header value (`Bearer TOKEN`, `Basic TOKEN`, `SCHEME TOKEN`), as Moya's
        /// `AccessTokenPlugin` builds it.
        package var authorizationValue: String {
            switch type {
            case .bearer: return "Bearer \(token.value)"
            case .basic: return "Basic \(token.value)"
            case .custom(let scheme): return "\(scheme) \(token.value)"
            }
        }
    }

    package struct Credentials: Sendable, Equatable {
        package var user: String
        package var password: Secret
        /// Send Basic up front instead of answering a 401 challenge. Default false.
        package var preemptive: Bool = false

        package init(user: String, password: Secret, preemptive: Bool = false) {
            self.user = user
            self.password = password
            self.preemptive = preemptive
        }
    }

    package var name: String
    /// Absent only for stub upstreams.
    package var baseURL: UpstreamURL?
    /// `servers`: the servers connections go to, in turn, instead of the base URL's host (which is still sent in
    /// `Host` and as the TLS server name); nil resolves the host.
    package var servers: [UpstreamServer]?
    /// Added to every request to this upstream.
    package var headers = HTTPFields()
    package var timeout = Timeout()
    package var pool = Pool()
    package var tls = TLS()
    package var accessToken: AccessToken?
    /// `access_token` with `type: oauth2_client_credentials` (then ``accessToken`` is nil).
    package var oauth2: OAuth2ClientCredentialsConfig?
    package var credentials: Credentials?
    /// Default `.none`.
    package var validation: Validation = .none
    /// When set, the upstream is never contacted over the network.
    package var stub: StubConfig?
    /// `moya-gateway spy`: recorded answers for an upstream that has a `base_url`: a request one of their responses
    /// matches is answered from them, any other is proxied. Not read from the file.
    package var spy: StubConfig?
    /// When set, calls are refused for a while after too many failed in a row.
    package var circuitBreaker: CircuitBreakerConfig?
    /// When set, each of the upstream's addresses is probed in the background, and one that fails its checks gets
    /// no requests until it passes again.
    package var healthCheck: HealthCheckConfig?

    package init(name: String, baseURL: UpstreamURL? = nil) {
        self.name = name
        self.baseURL = baseURL
    }

    package var isStub: Bool { stub != nil }
}

/// `circuit_breaker`: stop calling an upstream that keeps failing, and answer 503 at once instead.
package struct CircuitBreakerConfig: Sendable, Equatable {
    /// Failed calls in a row (no answer, or 502, 503 or 504) that open the circuit. Default 5.
    package var failures: Int = 5
    /// How long an open circuit refuses calls before it lets one trial call through. Default 10 s.
    package var openFor: Duration = .seconds(10)

    package init() {}
}

/// `health_check`: active checks of each address of an upstream (its `servers`, or its host name's addresses).
package struct HealthCheckConfig: Sendable, Equatable {
    /// The path (and query) probed with GET on each address. Required.
    package var path: String
    /// Time between two rounds of probes. Default 5 s.
    package var interval: Duration = .seconds(5)
    /// How long a probe may take. Default 1 s.
    package var timeout: Duration = .seconds(1)
    /// Failed probes in a row (no answer in time, or a status outside 200–399) that take an address out. Default 2.
    package var unhealthyAfter: Int = 2
    /// Passed probes in a row that bring it back. Default 2.
    package var healthyAfter: Int = 2
    /// Fields sent with every probe, over the upstream's `headers` and `User-Agent` (a health endpoint that wants a
    /// key of its own, say `${file:...}`). Never logged.
    package var headers = HTTPFields()

    package init(path: String) {
        self.path = path
    }
}

/// `routes[].rate_limit`: how often a caller may call a route; past it the gateway answers 429 with `Retry-After`.
package struct RateLimitConfig: Sendable, Equatable {
    /// Who shares a budget.
    package enum Scope: String, Sendable, Equatable {
        /// Each caller its own: the API-key client when `clients.api_keys` is set, else the peer address.
        case caller
        /// One budget for the whole route, whoever calls.
        case route
    }

    /// Calls allowed per `per`, once the burst is spent.
    package var requests: Int
    /// Default 1 s.
    package var per: Duration = .seconds(1)
    /// Calls allowed at once by a caller that has not called for a while. Default `requests`.
    package var burst: Int
    /// Default `caller`.
    package var by: Scope = .caller

    package init(requests: Int, per: Duration = .seconds(1), burst: Int? = nil, by: Scope = .caller) {
        self.requests = requests
        self.per = per
        self.burst = burst ?? requests
        self.by = by
    }
}

/// A stubbed upstream's canned response (Moya's `StubBehavior` and sample data).
package struct StubConfig: Sendable, Equatable {
    /// Default 200.
    package var status: Int = 200
    package var headers = HTTPFields()
    /// The response body: from `body`, from `body_file` (read at load time), or `body_bytes` generated bytes.
    package var body: [UInt8] = []
    /// The resolved `body_file` path, when the body came from a file.
    package var bodyFile: String?
    /// `body_bytes`: the body is this many generated bytes (for load tests); `body` then holds them.
    package var bodyBytes: Int?
    /// `delay`: fixed delay; `.zero` = immediate. Mutually exclusive with `latency`.
    package var delay: Duration = .zero
    /// `latency`: a sampled delay per response.
    package var latency: StubLatencyConfig?
    /// Fraction 0...1 of responses that answer `errorStatus` instead. Default 0.
    package var errorRate: Double = 0
    /// Default 500.
    package var errorStatus: Int = 500
    /// `faults`: failures injected instead of the answer (see ``StubFaultConfig``); responses inherit them.
    package var faults: [StubFaultConfig] = []
    /// The default answer's body compiled as a template (nil when it has no `{{…}}` or `template: false`).
    package var bodyTemplate: StubTemplate?
    /// The default answer's templated header values.
    package var headerTemplates: [StubHeaderTemplate] = []
    /// `responses`: answers chosen by matching the request, tried in order before the default answer.
    package var responses: [StubResponseConfig] = []
    /// Whether the stub has a default answer: without `responses` always; with them only when the stub sets
    /// `status`, `body`, `body_file` or `body_bytes` itself. A request no response matches gets 404 otherwise.
    package var hasDefault = true
    /// `seed`: seeds every random choice of the stub (latencies, rates, `{{uuid}}`, `{{random_int}}`); nil: random.
    package var seed: UInt64?

    package init() {}

    /// The default answer as one of the stub's answers.
    package var defaultAnswer: StubAnswerConfig {
        var answer = StubAnswerConfig()
        answer.status = status
        answer.headers = headers
        answer.body = body
        answer.bodyFile = bodyFile
        answer.bodyBytes = bodyBytes
        answer.bodyTemplate = bodyTemplate
        answer.headerTemplates = headerTemplates
        answer.delay = delay
        answer.latency = latency
        answer.errorRate = errorRate
        answer.errorStatus = errorStatus
        answer.faults = faults
        return answer
    }
}

/// `stub.latency`: how a stub's delay is sampled. See ``StubLatency``.
package enum StubLatencyConfig: Sendable, Equatable {
    /// Always `value` (`distribution: fixed`, `mean:`).
    case fixed(Duration)
    /// Uniform in `min...max`.
    case uniform(min: Duration, max: Duration)
    /// Normal with `mean` and `stddev`, clamped at 0 and to the optional `min`/`max`.
    case normal(mean: Duration, stddev: Duration, min: Duration?, max: Duration?)
    /// Log-normal with `median` and `sigma` (the standard deviation of the delay's natural logarithm), clamped to the
    /// optional `min`/`max`: the long right tail of real services' latencies (WireMock's `lognormal`).
    case lognormal(median: Duration, sigma: Double, min: Duration?, max: Duration?)
}

// MARK: - routes

package struct RouteConfig: Sendable, Equatable {
    package struct Match: Sendable, Equatable {
        /// Exactly one of the three is set.
        package var path: String?
        package var pathPrefix: String?
        /// A template such as `/api/users/{id}`; a parameter matches one non-empty segment.
        package var pathParams: String?
        /// `nil` = every method. Case-sensitive; GET also allows HEAD.
        package var methods: [HTTPMethod]?
        /// Lower-cased host without port; `nil` = any host.
        package var host: String?

        package init(path: String? = nil, pathPrefix: String? = nil, pathParams: String? = nil,
                    methods: [HTTPMethod]? = nil, host: String? = nil) {
            self.path = path
            self.pathPrefix = pathPrefix
            self.pathParams = pathParams
            self.methods = methods
            self.host = host
        }
    }

    package struct Rewrite: Sendable, Equatable {
        package var stripPrefix: String?
        package var addPrefix: String?

        package init(stripPrefix: String? = nil, addPrefix: String? = nil) {
            self.stripPrefix = stripPrefix
            self.addPrefix = addPrefix
        }
    }

    package struct Retries: Sendable, Equatable {
        /// `attempts`: total attempts including the first (1 = no retry). Idempotent methods only, and only when no
        /// response byte arrived.
        package var attempts: Int
        /// Also retry when the upstream answers one of these statuses (default none).
        package var statuses: [Int] = []
        /// Pause between attempts (default none).
        package var backoff: Duration?

        package init(attempts: Int, statuses: [Int] = [], backoff: Duration? = nil) {
            self.attempts = attempts
            self.statuses = statuses
            self.backoff = backoff
        }
    }

    package var name: String
    package var match: Match
    /// The name of an upstream in ``GatewayConfig/upstreams``.
    package var upstream: String
    package var rewrite: Rewrite?
    /// Default false. Only GET and HEAD coalesce.
    package var coalesce: Bool = false
    package var coalesceVary: [String] = []
    /// Default false. When true, an HTTP/1.1 request asking to upgrade to `websocket` is relayed to the upstream as
    /// a WebSocket handshake and, once the upstream answers 101, its connection becomes a byte tunnel both ways.
    /// Other requests on the route are proxied as usual; an upgrade on a route without it is not forwarded.
    package var websocket: Bool = false
    /// How long a tunnel may carry nothing either way before it is closed (`websocket: { idle_timeout: }`); nil: the
    /// upstream's `timeout.response`.
    package var websocketIdleTimeout: Duration?
    /// The largest request body this route takes, above or below `server.limits.max_body_bytes` (an upload route's
    /// 1 GiB, a JSON API's 64 KiB); nil: the server's.
    package var maxBodyBytes: Int64?
    /// API-key client names allowed on this route; `nil` = any caller the `clients` section admits.
    package var clients: [String]?
    /// The whole request's deadline, retries included.
    package var timeout: Duration?
    package var retries: Retries?
    package var rateLimit: RateLimitConfig?
    /// Whether a long upstream answer is buffered (see ``BufferingConfig``) rather than relayed at the client's pace.
    /// Default true.
    package var buffering: Bool = true

    package init(name: String, match: Match, upstream: String) {
        self.name = name
        self.match = match
        self.upstream = upstream
    }
}
