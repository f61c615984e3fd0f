import COpenSSL

/// SHA-1 through OpenSSL, for protocols that still name it (the WebSocket handshake's accept value, RFC 6455 §4.2.2).
/// Not for anything that needs collision resistance.
package enum SHA1 {
    /// The 20-byte digest of `bytes`.
    package static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { raw in
            output.withUnsafeMutableBufferPointer { out in
                EVP_Digest(raw.baseAddress, raw.count, out.baseAddress, &length, EVP_sha1(), nil)
            }
        }
        // EVP_Digest fails only without memory or without SHA-1 in the library; 20 zero bytes match nothing.
        return ok == 1 && length == 20 ? output : [UInt8](repeating: 0, count: 20)
    }
}
