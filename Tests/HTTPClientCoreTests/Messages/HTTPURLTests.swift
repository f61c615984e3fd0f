import HTTPClientCore
import Testing

/// `HTTPURL` splits absolute http(s) URLs on their UTF-8 bytes.
@Suite struct HTTPURLTests {
    @Test func splitsSchemeHostPortAndTarget() throws {
        let plain = try HTTPURL(parsing: "http://127.0.0.1:8080/a/b?x=1#frag")
        #expect(plain.scheme == "http" && plain.host == "127.0.0.1" && plain.port == 8080 && plain.target == "/a/b?x=1")
        let secure = try HTTPURL(parsing: "HTTPS://Example.com")
        #expect(secure.scheme == "https" && secure.host == "Example.com" && secure.port == 443 && secure.target == "/")
        let query = try HTTPURL(parsing: "http://h?q")
        #expect(query.target == "/?q" && query.port == 80)
        let ipv6 = try HTTPURL(parsing: "http://[::1]:9/p")
        #expect(ipv6.host == "::1" && ipv6.port == 9 && ipv6.target == "/p")
        let emptyPort = try HTTPURL(parsing: "http://[::1]:/")
        #expect(emptyPort.port == 80)
        let unicode = try HTTPURL(parsing: "http://h/é")
        #expect(unicode.target == "/é")
    }

    @Test func refusesWhatIsNotAnAbsoluteHTTPURL() {
        for bad in [
            "", "ftp://h/", "http:/h", "http://", "http://user@h/", "http://h:0/", "http://h:65536/",
            "http://h:12a/", "http://h:123456/", "http://[::1/", "http://[::1]x/", "http://:80/", "h/x",
            // Found by fuzzing (Fuzz/corpus/url/regression-control-in-host): a NUL in the host would end the
            // name getaddrinfo resolves early, and spaces or controls could never be sent in Host.
            "http://a\u{0}b/", "http://a b:80/", "http://a\tb/", "http://[::1\n]/", "http://h:8\r0/",
            "http://a\u{7F}/"
        ] {
            #expect(throws: HTTPClientError.self, "\(bad)") { try HTTPURL(parsing: bad) }
        }
    }
}
