import HTTPWire

/// One answer a stub can give: the head, the body (plain or templated) and how it is delivered (latency, injected
/// errors and faults). The stub's own keys make its default answer; each of its `responses` (and each step of a
/// `sequence`) is one of these, with what it does not set taken from the level above (see `docs/configuration.md`).
package struct StubAnswerConfig: Sendable, Equatable {
    /// Default 200.
    package var status: Int = 200
    package var headers = HTTPFields()
    /// The body as written (or read from `body_file`, or generated for `body_bytes`).
    package var body: [UInt8] = []
    /// The resolved `body_file` path, when the body came from a file.
    package var bodyFile: String?
    /// `body_bytes`, when the body was generated.
    package var bodyBytes: Int?
    /// The body compiled as a template; nil when it has no `{{…}}` (or `template: false`): sent as it is.
    package var bodyTemplate: StubTemplate?
    /// Header values compiled as templates, by their position in ``headers``; empty when none has a `{{…}}`.
    package var headerTemplates: [StubHeaderTemplate] = []
    /// `delay`: fixed delay; `.zero` = immediate. Mutually exclusive with `latency`.
    package var delay: Duration = .zero
    /// `latency`: a sampled delay per response.
    package var latency: StubLatencyConfig?
    /// Fraction 0...1 of answers replaced by `errorStatus`.
    package var errorRate: Double = 0
    /// Default 500.
    package var errorStatus: Int = 500
    /// Faults injected instead of the answer, each at its rate.
    package var faults: [StubFaultConfig] = []

    package init() {}

    /// Whether the answer has neither a delay nor a latency distribution (it is given at once, unless a fault that
    /// takes time is drawn).
    package var isImmediate: Bool { latency == nil && delay <= .zero }
}

/// A header whose value is a template (`X-Echo: "{{header.X-Tenant}}"`).
package struct StubHeaderTemplate: Sendable, Equatable {
    /// The field's position in the answer's headers.
    package var index: Int
    package var template: StubTemplate

    package init(index: Int, template: StubTemplate) {
        self.index = index
        self.template = template
    }
}

/// `stub.responses[i]`: the answer (or sequence of answers) given to the requests its `match` selects.
package struct StubResponseConfig: Sendable, Equatable {
    package var match: StubMatchConfig
    /// One answer, or a `sequence`'s steps in order (the last repeats once the others have been given).
    package var answers: [StubAnswerConfig]
    /// Whether the response is a `sequence` (its steps advance on every request it answers).
    package var isSequence: Bool

    package init(match: StubMatchConfig, answers: [StubAnswerConfig], isSequence: Bool) {
        self.match = match
        self.answers = answers
        self.isSequence = isSequence
    }
}

/// `stub.responses[i].match`: what a request (as the upstream would see it, after the route's `rewrite`) must be for
/// the response to answer it. Every condition given must hold; none given matches every request.
package struct StubMatchConfig: Sendable, Equatable {
    /// `nil` = every method; GET also allows HEAD, as for routes.
    package var methods: [HTTPMethod]?
    /// At most one of the three, in the route syntax (`path`, `path_prefix`, `path_params` with `{name}` segments).
    package var path: String?
    package var pathPrefix: String?
    package var pathParams: String?
    /// Query parameters that must be present with these values (compared decoded: `%XX` and `+` for a space).
    package var query: [StubNameValue] = []
    /// Request headers that must be present with exactly these values (names without case).
    package var headers: [StubNameValue] = []
    /// Fields of a JSON request body that must equal these values (a field path is its keys joined with `.`).
    package var json: [StubJSONField] = []

    package init() {}

    /// The names of the `{parameters}` of ``pathParams``, in order (what a template's `{{path.NAME}}` may use).
    package var parameterNames: [String] {
        guard let pathParams else { return [] }
        return PathPattern.template(pathParams).parameterNames
    }
}

/// A name and the value it must have.
package struct StubNameValue: Sendable, Equatable {
    package var name: String
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A JSON body field and the value it must equal.
package struct StubJSONField: Sendable, Equatable {
    /// The keys from the body's top-level object down (`user.address.city` → `["user", "address", "city"]`); a key
    /// that is a number also indexes an array.
    package var path: [String]
    package var value: StubJSONValue

    package init(path: [String], value: StubJSONValue) {
        self.path = path
        self.value = value
    }
}

/// A JSON value, as written in a match (`7`, `"7"`, `true`, `null`, lists, mappings). Numbers compare as numbers
/// (`7` equals `7.0`), and a quoted YAML scalar is a string (`'7'` does not equal the number 7).
package indirect enum StubJSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([StubJSONValue])
    case object([String: StubJSONValue])
}

/// `faults[i]`: a failure injected instead of the answer, at `rate`.
package struct StubFaultConfig: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        /// The connection is reset before any byte of the answer.
        case connectionReset = "connection_reset"
        /// The connection is closed without an answer.
        case emptyResponse = "empty_response"
        /// Bytes that are not an HTTP response, then the connection is closed.
        case malformedResponse = "malformed_response"
        /// The head and half of the body (of the length the head declares), then the connection is closed.
        case truncatedBody = "truncated_body"
        /// The head, then the body a piece at a time over `duration`.
        case slowBody = "slow_body"
    }

    /// Whom the fault acts on.
    package enum Mode: String, Sendable {
        /// The client's connection (over HTTP/2, its stream only), as WireMock's faults act on their caller.
        case client
        /// The gateway: the stub fails as an upstream would, and the gateway's retries, circuit breaker and 502/504
        /// answers apply.
        case upstream
    }

    package var kind: Kind
    /// Fraction 0...1 of answers that get this fault.
    package var rate: Double
    /// Default `client`.
    package var mode: Mode = .client
    /// `slow_body`: how long the body takes to arrive (required there, not used by the others).
    package var duration: Duration?

    package init(kind: Kind, rate: Double, mode: Mode = .client, duration: Duration? = nil) {
        self.kind = kind
        self.rate = rate
        self.mode = mode
        self.duration = duration
    }
}
