import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// One TLS connection driven through memory BIOs: the loop feeds it ciphertext and writes out what it produces,
/// so no OpenSSL call ever blocks.
final class TLSSession {
    enum ReadResult {
        case bytes(Int)
        case wantMore
        case closed
    }

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private(set) var handshakeComplete = false
    let context: TLSContext

    init(context: TLSContext, serverName: String?) throws {
        guard let ssl = SSL_new(context.context) else { throw TLSContext.lastError("SSL_new") }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSContext.lastError("BIO_new")
        }
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.context = context
        SSL_set_bio(ssl, readBIO, writeBIO)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName {
                let isIP = SocketAddress(numericHost: serverName, port: 0) != nil
                if !isIP { _ = cgw_SSL_set_tlsext_host_name(ssl, serverName) }
                if context.clientConfiguration?.verifyPeer ?? true {
                    let param = SSL_get0_param(ssl)
                    if isIP {
                        X509_VERIFY_PARAM_set1_ip_asc(param, serverName)
                    } else {
                        SSL_set1_host(ssl, serverName)
                    }
                }
            }
            if !context.alpnWire.isEmpty {
                context.alpnWire.withUnsafeBufferPointer {
                    _ = SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count))
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)  // frees both BIOs
    }

    /// Hands received ciphertext to OpenSSL.
    func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = BIO_write(readBIO, base, Int32(bytes.count))
    }

    /// Advances the handshake; true once complete.
    func handshake() throws -> Bool {
        if handshakeComplete { return true }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeComplete = true
            return true
        }
        let code = SSL_get_error(ssl, rc)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return false }
        throw failure("handshake", code: code)
    }

    /// Decrypts into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> ReadResult {
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if rc > 0 { return .bytes(Int(rc)) }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantMore
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: throw failure("read", code: code)
        }
    }

    /// Encrypts `bytes`; the ciphertext is then in ``takeOutput(into:)``.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        ERR_clear_error()
        var offset = 0
        while offset < bytes.count {
            let rc = SSL_write(ssl, base + offset, Int32(min(bytes.count - offset, Int(Int32.max))))
            guard rc > 0 else { throw failure("write", code: SSL_get_error(ssl, rc)) }
            offset += Int(rc)
        }
    }

    /// Queues a close_notify alert.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }

    /// How many bytes of ciphertext ``takeOutput(into:)`` would move.
    var pendingOutputCount: Int { Int(cgw_BIO_ctrl_pending(writeBIO)) }

    /// Appends the pending ciphertext to `output` (best with room for ``pendingOutputCount`` more bytes), moving it
    /// out of the write BIO.
    func takeOutput(into output: consuming [UInt8]) -> [UInt8] {
        let pending = pendingOutputCount
        guard pending > 0 else { return output }
        let start = output.count
        // Appending zeros to an array is specialized code; making an array of a given size is a generic call into
        // the standard library (a metadata lookup) that costs more than the zeroing.
        output.append(contentsOf: repeatElement(0, count: pending))
        let read = Int(output.withUnsafeMutableBytes { BIO_read(writeBIO, $0.baseAddress! + start, Int32(pending)) })
        if read < pending { output.removeLast(pending - max(0, read)) }
        return output
    }

    /// The ALPN protocol agreed in the handshake.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The peer's certificate (after the handshake): its subject in OpenSSL's one-line form and its DNS names.
    var peerCertificate: TLSPeerCertificate? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var buffer = [CChar](repeating: 0, count: 1024)
        let subject =
            X509_NAME_oneline(X509_get_subject_name(certificate), &buffer, Int32(buffer.count))
            .map { String(cString: $0) } ?? ""
        return TLSPeerCertificate(subject: subject, dnsNames: TLSContext.dnsNames(of: certificate))
    }

    private func failure(_ operation: String, code: Int32) -> TLSError {
        if code == SSL_ERROR_SSL && !context.isServer {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK, let text = X509_verify_cert_error_string(verify) {
                ERR_clear_error()
                return TLSError(
                    "certificate verification failed: \(String(decoding: UnsafeRawBufferPointer(start: text, count: strlen(text)), as: UTF8.self))"
                )
            }
        }
        return TLSContext.lastError("\(operation) failed (SSL error \(code))")
    }
}
