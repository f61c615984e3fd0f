import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// An OpenSSL `SSL_CTX` for a server (with SNI certificate choice, ALPN selection and optional client certificates)
/// or a client (with verification and an optional client certificate).
package final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Contexts of the server's other certificates (index `i + 1` in ``serverNames``); owned by this context.
    private var alternates: [TLSContext] = []
    /// SNI name → certificate: 0 is this context's own, `i + 1` is `alternates[i]`.
    private var serverNames = TLSServerNameTable()
    private var rejectUnknownServerNames = false
    /// ALPN protocols in wire format (length-prefixed).
    let alpnWire: [UInt8]
    package let isServer: Bool
    let clientConfiguration: TLSClientConfiguration?

    /// Builds a server context; fails with the file and OpenSSL's reason when a certificate, key or CA file is
    /// unusable.
    package convenience init(server configuration: TLSServerConfiguration) throws {
        try self.init(serverCertificate: configuration.defaultCertificate, configuration: configuration)
        rejectUnknownServerNames = configuration.rejectUnknownServerNames
        serverNames.add(names(of: configuration.defaultCertificate), index: 0)
        for files in configuration.certificates {
            let alternate = try TLSContext(serverCertificate: files, configuration: configuration)
            alternates.append(alternate)
            serverNames.add(alternate.names(of: files), index: alternates.count)
        }
        let arg = Unmanaged.passUnretained(self).toOpaque()
        _ = cgw_SSL_CTX_set_tlsext_servername_arg(context, arg)
        _ = cgw_SSL_CTX_set_tlsext_servername_callback(context) { ssl, alert, arg in
            guard let ssl, let arg, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else {
                return SSL_TLSEXT_ERR_OK
            }
            let owner = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
            let serverName = String(decoding: UnsafeRawBufferPointer(start: name, count: strlen(name)), as: UTF8.self)
            switch owner.serverNames.lookup(serverName) {
            case .some(let index) where index > 0 && index <= owner.alternates.count:
                SSL_set_SSL_CTX(ssl, owner.alternates[index - 1].context)
                return SSL_TLSEXT_ERR_OK
            case .some:
                return SSL_TLSEXT_ERR_OK
            case .none:
                guard owner.rejectUnknownServerNames else { return SSL_TLSEXT_ERR_OK }
                alert?.pointee = cgw_SSL_AD_UNRECOGNIZED_NAME()
                return SSL_TLSEXT_ERR_ALERT_FATAL
            }
        }
    }

    private init(serverCertificate files: TLSCertificateFiles, configuration: TLSServerConfiguration) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSContext.lastError("SSL_CTX_new") }
        self.context = context
        self.isServer = true
        self.clientConfiguration = nil
        self.alpnWire = TLSContext.wireFormat(configuration.alpnProtocols)
        TLSContext.applyCommonOptions(context)
        _ = cgw_SSL_CTX_set_options(
            context, cgw_SSL_OP_CIPHER_SERVER_PREFERENCE() | cgw_SSL_OP_PRIORITIZE_CHACHA())
        guard SSL_CTX_set_ciphersuites(context, TLSContext.tls13CipherSuites) == 1 else {
            throw TLSContext.lastError("TLS 1.3 cipher suites")
        }
        guard SSL_CTX_use_certificate_chain_file(context, files.certificateChainPath) == 1 else {
            throw TLSContext.lastError("certificate \(files.certificateChainPath)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, files.privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            throw TLSContext.lastError("private key \(files.privateKeyPath)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError(
                "private key \(files.privateKeyPath) does not match certificate \(files.certificateChainPath)")
        }
        try TLSContext.checkValidityPeriod(of: context, path: files.certificateChainPath)
        try TLSContext.applyClientAuthentication(configuration.clientAuthentication, to: context)
        if !alpnWire.isEmpty {
            let arg = Unmanaged.passUnretained(self).toOpaque()
            SSL_CTX_set_alpn_select_cb(
                context,
                { _, out, outLength, input, inputLength, arg in
                    guard let arg, let out, let outLength, let input else { return SSL_TLSEXT_ERR_NOACK }
                    let owner = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
                    return owner.alpnWire.withUnsafeBufferPointer { ours -> Int32 in
                        var selected: UnsafeMutablePointer<UInt8>?
                        var selectedLength: UInt8 = 0
                        let rc = SSL_select_next_proto(
                            &selected, &selectedLength, ours.baseAddress, UInt32(ours.count),
                            input, inputLength)
                        guard rc == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                        out.pointee = UnsafePointer(selected)
                        outLength.pointee = selectedLength
                        return SSL_TLSEXT_ERR_OK
                    }
                }, arg)
        }
    }

    /// The TLS 1.3 suites a server chooses from, in its order (Go's and Cloudflare's): AES-128-GCM first, as fast and
    /// as safe as AES-256-GCM in practice and cheaper per record (OpenSSL's default order, which most clients send too,
    /// puts AES-256-GCM first); ChaCha20-Poly1305 next, and first for a client that lists it first
    /// (`SSL_OP_PRIORITIZE_CHACHA`: a client without AES hardware says so that way); AES-256-GCM last.
    static let tls13CipherSuites = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"

    /// Refuses a server certificate that has expired or is not valid yet: every client would reject it, so serving it
    /// only turns a configuration mistake into failed handshakes.
    private static func checkValidityPeriod(of context: OpaquePointer, path: String) throws {
        guard let certificate = SSL_CTX_get0_certificate(context) else { return }
        if let notAfter = X509_get0_notAfter(certificate), X509_cmp_current_time(notAfter) < 0 {
            throw TLSError("certificate \(path) expired on \(describe(notAfter))")
        }
        if let notBefore = X509_get0_notBefore(certificate), X509_cmp_current_time(notBefore) > 0 {
            throw TLSError("certificate \(path) is not valid before \(describe(notBefore))")
        }
    }

    /// An ASN.1 time as `YYYY-MM-DD hh:mm:ss UTC`.
    private static func describe(_ time: UnsafePointer<ASN1_TIME>) -> String {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return "an unreadable date" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }

    /// Asks for (or requires) client certificates verified against the CA file. Every certificate's context gets the
    /// same settings, since SNI may switch a connection to any of them; a fixed session id context keeps session
    /// resumption working with verification on.
    private static func applyClientAuthentication(_ authentication: TLSClientAuthentication, to context: OpaquePointer)
        throws
    {
        let sessionContext = Array("moya-gateway".utf8)
        _ = SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count))
        let caFile: String
        var mode = SSL_VERIFY_PEER
        switch authentication {
        case .none: return
        case .optional(let file): caFile = file
        case .required(let file):
            caFile = file
            mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT
        }
        guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1, let names = SSL_load_client_CA_file(caFile)
        else {
            throw TLSContext.lastError("client CA file \(caFile)")
        }
        SSL_CTX_set_client_CA_list(context, names)
        SSL_CTX_set_verify(context, mode, nil)
    }

    /// The SNI names `files` is chosen for: the configured ones, else those of the certificate this context loaded.
    private func names(of files: TLSCertificateFiles) -> [String] {
        if let configured = files.serverNames { return configured }
        return TLSContext.dnsNames(of: SSL_CTX_get0_certificate(context))
    }

    /// A certificate's DNS subject-alternative names, else its common name.
    static func dnsNames(of certificate: OpaquePointer?) -> [String] {
        guard let certificate else { return [] }
        var buffer = [CChar](repeating: 0, count: 8192)
        let length = Int(cgw_X509_dns_names(certificate, &buffer, Int32(buffer.count)))
        let text = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "\n").map(String.init)
    }

    /// Builds a client context.
    package init(client configuration: TLSClientConfiguration) throws {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSContext.lastError("SSL_CTX_new") }
        self.context = context
        self.isServer = false
        self.clientConfiguration = configuration
        self.alpnWire = TLSContext.wireFormat(configuration.alpnProtocols)
        TLSContext.applyCommonOptions(context)
        if configuration.verifyPeer {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile = configuration.caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw TLSContext.lastError("CA file \(caFile)")
                }
            } else {
                SSL_CTX_set_default_verify_paths(context)
            }
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        if let client = configuration.clientCertificate {
            guard SSL_CTX_use_certificate_chain_file(context, client.certificateChainPath) == 1,
                SSL_CTX_use_PrivateKey_file(context, client.privateKeyPath, SSL_FILETYPE_PEM) == 1
            else {
                throw TLSContext.lastError("client certificate \(client.certificateChainPath)")
            }
        }
    }

    deinit {
        SSL_CTX_free(context)
    }

    private static func applyCommonOptions(_ context: OpaquePointer) {
        _ = cgw_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        _ = cgw_SSL_CTX_set_options(context, cgw_SSL_OP_NO_RENEGOTIATION() | cgw_SSL_OP_NO_COMPRESSION())
        _ = cgw_SSL_CTX_set_mode(context, cgw_SSL_MODE_RELEASE_BUFFERS())
    }

    private static func wireFormat(_ protocols: [String]) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols where !name.isEmpty && name.utf8.count < 256 {
            wire.append(UInt8(name.utf8.count))
            wire.append(contentsOf: name.utf8)
        }
        return wire
    }

    /// Takes OpenSSL's error queue as a message and clears it.
    static func lastError(_ what: String) -> TLSError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TLSError(reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))")
    }
}
