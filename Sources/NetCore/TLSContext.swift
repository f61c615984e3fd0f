#if canImport(Glibc)
import Glibc
#endif
import COpenSSL

/// An OpenSSL `SSL_CTX` for a server (with SNI and ALPN selection) or a client (with verification).
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Contexts for SNI names, each holding its own certificate; owned by this context.
    private var contextsByServerName: [String: TLSContext] = [:]
    /// ALPN protocols in wire format (length-prefixed).
    let alpnWire: [UInt8]
    public let isServer: Bool
    let clientConfiguration: TLSClientConfiguration?

    /// Builds a server context; fails with the file and OpenSSL's reason when a certificate or key is unusable.
    public convenience init(server configuration: TLSServerConfiguration) throws {
        try self.init(serverCertificate: configuration.defaultCertificate, alpn: configuration.alpnProtocols)
        for (name, files) in configuration.certificatesByServerName {
            contextsByServerName[name.lowercased()] = try TLSContext(serverCertificate: files, alpn: configuration.alpnProtocols)
        }
        let arg = Unmanaged.passUnretained(self).toOpaque()
        _ = cgw_SSL_CTX_set_tlsext_servername_arg(context, arg)
        _ = cgw_SSL_CTX_set_tlsext_servername_callback(context) { ssl, _, arg in
            guard let ssl, let arg, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else {
                return SSL_TLSEXT_ERR_OK
            }
            let owner = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
            let key = String(decoding: UnsafeRawBufferPointer(start: name, count: strlen(name)), as: UTF8.self).lowercased()
            if let chosen = owner.contextsByServerName[key] {
                SSL_set_SSL_CTX(ssl, chosen.context)
            }
            return SSL_TLSEXT_ERR_OK
        }
    }

    private init(serverCertificate files: TLSCertificateFiles, alpn: [String]) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSContext.lastError("SSL_CTX_new") }
        self.context = context
        self.isServer = true
        self.clientConfiguration = nil
        self.alpnWire = TLSContext.wireFormat(alpn)
        TLSContext.applyCommonOptions(context)
        _ = cgw_SSL_CTX_set_options(context, cgw_SSL_OP_CIPHER_SERVER_PREFERENCE())
        guard SSL_CTX_use_certificate_chain_file(context, files.certificateChainPath) == 1 else {
            throw TLSContext.lastError("certificate \(files.certificateChainPath)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, files.privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            throw TLSContext.lastError("private key \(files.privateKeyPath)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError("private key \(files.privateKeyPath) does not match certificate \(files.certificateChainPath)")
        }
        if !alpnWire.isEmpty {
            let arg = Unmanaged.passUnretained(self).toOpaque()
            SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, input, inputLength, arg in
                guard let arg, let out, let outLength, let input else { return SSL_TLSEXT_ERR_NOACK }
                let owner = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
                return owner.alpnWire.withUnsafeBufferPointer { ours -> Int32 in
                    var selected: UnsafeMutablePointer<UInt8>?
                    var selectedLength: UInt8 = 0
                    let rc = SSL_select_next_proto(&selected, &selectedLength, ours.baseAddress, UInt32(ours.count),
                                                   input, inputLength)
                    guard rc == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                    out.pointee = UnsafePointer(selected)
                    outLength.pointee = selectedLength
                    return SSL_TLSEXT_ERR_OK
                }
            }, arg)
        }
    }

    /// Builds a client context.
    public init(client configuration: TLSClientConfiguration) throws {
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
                  SSL_CTX_use_PrivateKey_file(context, client.privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
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
