/// `server`: the listeners, loops, protocols, compression, limits, trusted proxies and response buffering.
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

/// `server.tls`: the TLS listeners and the certificate they serve.
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

/// `server.compression`: gzip for clients that accept it.
package struct CompressionConfig: Sendable, Equatable {
    /// Default true.
    package var gzip: Bool = true
    /// Smallest body compressed. Default 1024.
    package var minBytes: Int = 1024

    package init() {}
}
