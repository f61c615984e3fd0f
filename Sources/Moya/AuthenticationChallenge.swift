import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Answers `401` challenges (`WWW-Authenticate: Basic` or `Digest`) with a `URLCredential`, as URLSession does for
/// a credential given through `RequestType.authenticate(with:)`.
enum AuthenticationChallenge {

    /// The `Authorization` value answering the challenge in `result`, or nil when there is no `401` Basic/Digest
    /// challenge, or the credential has no user and password.
    /// `method` and `uri` are the request's method and request-target (path and query), which a Digest answer signs.
    static func authorization(
        answering result: Result<Moya.Response, MoyaError>, method: String, uri: String,
        credential: URLCredential
    ) -> String? {
        guard let response = result.httpResponse, response.statusCode == 401,
            let user = credential.user, let password = credential.password,
            let header = headerValue(response.response, "WWW-Authenticate")
        else { return nil }
        let challenges = parseChallenges(header)
        if let digest = challenges.first(where: { $0.scheme == "digest" }) {
            return digestAuthorization(
                challenge: digest.parameters, user: user, password: password, method: method, uri: uri)
        }
        if challenges.contains(where: { $0.scheme == "basic" }) {
            return basicAuthorization(user: user, password: password)
        }
        return nil
    }

    /// `Basic base64(user:password)`.
    static func basicAuthorization(user: String, password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    static func headerValue(_ response: HTTPURLResponse?, _ name: String) -> String? {
        guard let fields = response?.allHeaderFields else { return nil }
        for (key, value) in fields {
            if let key = key as? String, key.caseInsensitiveCompare(name) == .orderedSame { return value as? String }
        }
        return nil
    }

    struct Challenge {
        let scheme: String
        var parameters: [String: String]
    }

    /// Parses `Scheme k=v, k="v", Scheme2 ...` (RFC 7235) loosely.
    static func parseChallenges(_ header: String) -> [Challenge] {
        var challenges: [Challenge] = []
        var scanner = Substring(header)
        func skipSpaces() { while let c = scanner.first, c == " " || c == "\t" || c == "," { scanner.removeFirst() } }
        func token() -> String {
            var result = ""
            while let c = scanner.first, c != " ", c != "\t", c != ",", c != "=" {
                result.append(c)
                scanner.removeFirst()
            }
            return result
        }
        while true {
            skipSpaces()
            guard !scanner.isEmpty else { break }
            let word = token()
            if scanner.first == "=" {
                scanner.removeFirst()
                var value = ""
                if scanner.first == "\"" {
                    scanner.removeFirst()
                    while let c = scanner.first, c != "\"" {
                        scanner.removeFirst()
                        if c == "\\", let escaped = scanner.first {
                            value.append(escaped)
                            scanner.removeFirst()
                        } else {
                            value.append(c)
                        }
                    }
                    if !scanner.isEmpty { scanner.removeFirst() }
                } else {
                    value = token()
                    // token68 padding
                    while scanner.first == "=" {
                        value.append("=")
                        scanner.removeFirst()
                    }
                }
                if !challenges.isEmpty { challenges[challenges.count - 1].parameters[word.lowercased()] = value }
            } else if !word.isEmpty {
                challenges.append(Challenge(scheme: word.lowercased(), parameters: [:]))
            }
        }
        return challenges
    }

    /// RFC 7616 Digest with MD5 (and `qop=auth` when offered).
    static func digestAuthorization(
        challenge: [String: String], user: String, password: String, method: String, uri: String,
        cnonce: String = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    ) -> String? {
        guard let realm = challenge["realm"], let nonce = challenge["nonce"] else { return nil }
        let algorithm = challenge["algorithm"] ?? "MD5"
        guard algorithm.uppercased() == "MD5" || algorithm.uppercased() == "MD5-SESS" else { return nil }
        var ha1 = MD5.hex("\(user):\(realm):\(password)")
        if algorithm.uppercased() == "MD5-SESS" { ha1 = MD5.hex("\(ha1):\(nonce):\(cnonce)") }
        let ha2 = MD5.hex("\(method):\(uri)")
        let qops = (challenge["qop"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        var parts = ["username=\"\(user)\"", "realm=\"\(realm)\"", "nonce=\"\(nonce)\"", "uri=\"\(uri)\""]
        if qops.contains("auth") {
            let nc = "00000001"
            let response = MD5.hex("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)")
            parts += ["qop=auth", "nc=\(nc)", "cnonce=\"\(cnonce)\"", "response=\"\(response)\""]
        } else {
            parts.append("response=\"\(MD5.hex("\(ha1):\(nonce):\(ha2)"))\"")
        }
        if let opaque = challenge["opaque"] { parts.append("opaque=\"\(opaque)\"") }
        parts.append("algorithm=\(algorithm)")
        return "Digest " + parts.joined(separator: ", ")
    }
}

/// MD5 (RFC 1321), only for HTTP Digest authentication.
enum MD5 {
    static func hex(_ string: String) -> String {
        digest([UInt8](string.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func digest(_ message: [UInt8]) -> [UInt8] {
        let s: [UInt32] = [
            7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
            5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
            4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
            6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21
        ]
        let k: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4294967296.0)) }
        var a0: UInt32 = 0x6745_2301
        var b0: UInt32 = 0xefcd_ab89
        var c0: UInt32 = 0x98ba_dcfe
        var d0: UInt32 = 0x1032_5476
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }
        for chunk in stride(from: 0, to: bytes.count, by: 64) {
            var m = [UInt32](repeating: 0, count: 16)
            for i in 0..<16 {
                let j = chunk + i * 4
                m[i] =
                    UInt32(bytes[j]) | UInt32(bytes[j + 1]) << 8 | UInt32(bytes[j + 2]) << 16 | UInt32(bytes[j + 3])
                    << 24
            }
            var a = a0
            var b = b0
            var c = c0
            var d = d0
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16:
                    f = (b & c) | (~b & d)
                    g = i
                case 16..<32:
                    f = (d & b) | (~d & c)
                    g = (5 * i + 1) % 16
                case 32..<48:
                    f = b ^ c ^ d
                    g = (3 * i + 5) % 16
                default:
                    f = c ^ (b | ~d)
                    g = (7 * i) % 16
                }
                f = f &+ a &+ k[i] &+ m[g]
                a = d
                d = c
                c = b
                b = b &+ (f << s[i] | f >> (32 - s[i]))
            }
            a0 = a0 &+ a
            b0 = b0 &+ b
            c0 = c0 &+ c
            d0 = d0 &+ d
        }
        return [a0, b0, c0, d0].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) } }
    }
}
