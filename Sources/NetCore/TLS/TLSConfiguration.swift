/// A certificate chain and private key in PEM files.
public struct TLSCertificateFiles: Sendable, Hashable {
    public var certificateChainPath: String
    public var privateKeyPath: String
    /// The SNI names a server chooses this certificate for: exact names or one-label wildcards (`*.example.com`).
    /// `nil` takes them from the certificate: its DNS subject-alternative names, else its common name.
    public var serverNames: [String]?

    public init(certificateChainPath: String, privateKeyPath: String, serverNames: [String]? = nil) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.serverNames = serverNames
    }
}

/// Whether a TLS server asks for client certificates (mutual TLS), and which CAs it trusts for them.
public enum TLSClientAuthentication: Sendable, Hashable {
    /// No client certificate is asked for.
    case none
    /// A certificate is asked for; a client without one is served, a client with one that does not verify is not.
    case optional(caFile: String)
    /// A certificate that verifies against `caFile` (a PEM bundle) is required; otherwise the handshake fails.
    case required(caFile: String)
}

/// Settings for TLS listeners: TLS 1.2 minimum, renegotiation off, ALPN, SNI and optional client certificates.
public struct TLSServerConfiguration: Sendable {
    /// The certificate served when the client sends no SNI or a name no certificate is for.
    public var defaultCertificate: TLSCertificateFiles
    /// More certificates, chosen by the client's SNI name (see ``TLSCertificateFiles/serverNames``). An exact name
    /// wins over a wildcard; among equals the default certificate, then the earlier one in this list, wins.
    public var certificates: [TLSCertificateFiles]
    /// Refuse (alert `unrecognized_name`) a client whose SNI name no certificate is for, instead of serving the
    /// default certificate. Clients without SNI still get the default.
    public var rejectUnknownServerNames: Bool
    /// ALPN protocols in order of preference, e.g. `["h2", "http/1.1"]`.
    public var alpnProtocols: [String]
    /// Time allowed from accept to a finished handshake before the connection is closed.
    public var handshakeTimeout: Duration
    /// Client certificates (mutual TLS).
    public var clientAuthentication: TLSClientAuthentication

    public init(defaultCertificate: TLSCertificateFiles, certificates: [TLSCertificateFiles] = [],
                rejectUnknownServerNames: Bool = false, alpnProtocols: [String] = ["http/1.1"],
                handshakeTimeout: Duration = .seconds(10), clientAuthentication: TLSClientAuthentication = .none) {
        self.defaultCertificate = defaultCertificate
        self.certificates = certificates
        self.rejectUnknownServerNames = rejectUnknownServerNames
        self.alpnProtocols = alpnProtocols
        self.handshakeTimeout = handshakeTimeout
        self.clientAuthentication = clientAuthentication
    }
}

/// Settings for outgoing TLS: verification on by default, SNI and host-name check always.
public struct TLSClientConfiguration: Sendable, Hashable {
    /// Verify the peer's chain and host name. Turning it off is for tests against throwaway certificates only.
    public var verifyPeer: Bool = true
    /// A PEM bundle of trusted CAs; `nil` uses the system store.
    public var caFile: String?
    /// An optional client certificate for mutual TLS.
    public var clientCertificate: TLSCertificateFiles?
    /// ALPN protocols to offer.
    public var alpnProtocols: [String] = ["http/1.1"]

    public init(verifyPeer: Bool = true, caFile: String? = nil, clientCertificate: TLSCertificateFiles? = nil,
                alpnProtocols: [String] = ["http/1.1"]) {
        self.verifyPeer = verifyPeer
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.alpnProtocols = alpnProtocols
    }
}

/// A TLS failure with OpenSSL's reason.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "TLS: \(reason)" }
}

/// What a TLS connection learned about the peer's certificate.
public struct TLSPeerCertificate: Sendable, Hashable {
    /// The subject in OpenSSL's one-line form, e.g. `/CN=a.example.com`.
    public var subject: String
    /// The DNS subject-alternative names, else the common name.
    public var dnsNames: [String]

    public init(subject: String, dnsNames: [String]) {
        self.subject = subject
        self.dnsNames = dnsNames
    }
}
