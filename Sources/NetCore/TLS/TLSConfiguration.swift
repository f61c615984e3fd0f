/// A certificate chain and private key in PEM files.
package struct TLSCertificateFiles: Sendable, Hashable {
    package var certificateChainPath: String
    package var privateKeyPath: String
    /// The SNI names a server chooses this certificate for: exact names or one-label wildcards (`*.example.com`).
    /// `nil` takes them from the certificate: its DNS subject-alternative names, else its common name.
    package var serverNames: [String]?

    package init(certificateChainPath: String, privateKeyPath: String, serverNames: [String]? = nil) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.serverNames = serverNames
    }
}

/// Whether a TLS server asks for client certificates (mutual TLS), and which CAs it trusts for them.
package enum TLSClientAuthentication: Sendable, Hashable {
    /// No client certificate is asked for.
    case none
    /// A certificate is asked for; a client without one is served, a client with one that does not verify is not.
    case optional(caFile: String)
    /// A certificate that verifies against `caFile` (a PEM bundle) is required; otherwise the handshake fails.
    case required(caFile: String)
}

/// Settings for TLS listeners: TLS 1.2 minimum, renegotiation off, ALPN, SNI and optional client certificates.
package struct TLSServerConfiguration: Sendable {
    /// The certificate served when the client sends no SNI or a name no certificate is for.
    package var defaultCertificate: TLSCertificateFiles
    /// More certificates, chosen by the client's SNI name (see ``TLSCertificateFiles/serverNames``). An exact name
    /// wins over a wildcard; among equals the default certificate, then the earlier one in this list, wins.
    package var certificates: [TLSCertificateFiles]
    /// Refuse (alert `unrecognized_name`) a client whose SNI name no certificate is for, instead of serving the
    /// default certificate. Clients without SNI still get the default.
    package var rejectUnknownServerNames: Bool
    /// ALPN protocols in order of preference, e.g. `["h2", "http/1.1"]`.
    package var alpnProtocols: [String]
    /// Time allowed from accept to a finished handshake before the connection is closed.
    package var handshakeTimeout: Duration
    /// Client certificates (mutual TLS).
    package var clientAuthentication: TLSClientAuthentication

    package init(
        defaultCertificate: TLSCertificateFiles, certificates: [TLSCertificateFiles] = [],
        rejectUnknownServerNames: Bool = false, alpnProtocols: [String] = ["http/1.1"],
        handshakeTimeout: Duration = .seconds(10), clientAuthentication: TLSClientAuthentication = .none
    ) {
        self.defaultCertificate = defaultCertificate
        self.certificates = certificates
        self.rejectUnknownServerNames = rejectUnknownServerNames
        self.alpnProtocols = alpnProtocols
        self.handshakeTimeout = handshakeTimeout
        self.clientAuthentication = clientAuthentication
    }
}

/// Settings for outgoing TLS: verification on by default, SNI and host-name check always.
package struct TLSClientConfiguration: Sendable, Hashable {
    /// Verify the peer's chain and host name. Turning it off is for tests against throwaway certificates only.
    package var verifyPeer: Bool = true
    /// A PEM bundle of trusted CAs; `nil` uses the system store.
    package var caFile: String?
    /// An optional client certificate for mutual TLS.
    package var clientCertificate: TLSCertificateFiles?
    /// ALPN protocols to offer.
    package var alpnProtocols: [String] = ["http/1.1"]

    package init(
        verifyPeer: Bool = true, caFile: String? = nil, clientCertificate: TLSCertificateFiles? = nil,
        alpnProtocols: [String] = ["http/1.1"]
    ) {
        self.verifyPeer = verifyPeer
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.alpnProtocols = alpnProtocols
    }
}

/// A TLS failure with OpenSSL's reason.
package struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { "TLS: \(reason)" }
}

/// What a TLS connection learned about the peer's certificate.
package struct TLSPeerCertificate: Sendable, Hashable {
    /// The subject in OpenSSL's one-line form, e.g. `/CN=a.example.com`.
    package var subject: String
    /// The DNS subject-alternative names, else the common name.
    package var dnsNames: [String]

    package init(subject: String, dnsNames: [String]) {
        self.subject = subject
        self.dnsNames = dnsNames
    }
}
