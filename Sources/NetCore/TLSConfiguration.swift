/// A certificate chain and private key in PEM files.
public struct TLSCertificateFiles: Sendable, Hashable {
    public var certificateChainPath: String
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// Settings for TLS listeners: TLS 1.2 minimum, renegotiation off, ALPN and SNI.
public struct TLSServerConfiguration: Sendable {
    /// The certificate served when the client sends no SNI or an unknown name.
    public var defaultCertificate: TLSCertificateFiles
    /// More certificates, chosen by the SNI server name (exact, case-insensitive).
    public var certificatesByServerName: [String: TLSCertificateFiles]
    /// ALPN protocols in order of preference, e.g. `["h2", "http/1.1"]`.
    public var alpnProtocols: [String]
    /// Time allowed for a handshake before the connection is closed.
    public var handshakeTimeout: Duration

    public init(defaultCertificate: TLSCertificateFiles, certificatesByServerName: [String: TLSCertificateFiles] = [:],
                alpnProtocols: [String] = ["http/1.1"], handshakeTimeout: Duration = .seconds(10)) {
        self.defaultCertificate = defaultCertificate
        self.certificatesByServerName = certificatesByServerName
        self.alpnProtocols = alpnProtocols
        self.handshakeTimeout = handshakeTimeout
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
