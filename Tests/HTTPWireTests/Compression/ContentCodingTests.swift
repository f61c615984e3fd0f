import Testing

@testable import HTTPWire

@Suite struct ContentCodingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let header: String?
        let expected: ContentCoding?
        var testDescription: String { "\(header ?? "<absent>") -> \(expected?.rawValue ?? "nil")" }
    }

    static let cases: [Case] = [
        Case(header: nil, expected: .identity),
        Case(header: "", expected: .identity),
        Case(header: "gzip", expected: .gzip),
        Case(header: "deflate", expected: .deflate),
        Case(header: "gzip, deflate, br", expected: .gzip),
        Case(header: "deflate, gzip", expected: .gzip),
        Case(header: "GZIP", expected: .gzip),
        Case(header: "x-gzip", expected: .gzip),
        Case(header: "gzip;q=0, deflate", expected: .deflate),
        Case(header: "gzip;q=0.5, deflate;q=0.8", expected: .deflate),
        Case(header: "gzip; Q=0.9 , deflate;q=0.9", expected: .gzip),
        Case(header: "*", expected: .gzip),
        Case(header: "*;q=0", expected: nil),
        Case(header: "*;q=0, identity", expected: .identity),
        Case(header: "identity;q=0", expected: nil),
        Case(header: "identity;q=0, deflate;q=0.1", expected: .deflate),
        Case(header: "gzip;q=0.5, identity", expected: .identity),
        Case(header: "br", expected: .identity),
        Case(header: "gzip;q=2", expected: .identity),
        Case(header: "gzip;q=0.1234", expected: .identity),
        Case(header: "gzip;q=abc, deflate", expected: .deflate),
        Case(header: "g zip, deflate", expected: .deflate),
        Case(header: ",,, gzip ,", expected: .gzip),
        Case(header: "gzip;level=1", expected: .identity),
        Case(header: "*;q=0.5, gzip;q=0", expected: .deflate),
        Case(header: "gzip;q=1.000", expected: .gzip),
        Case(header: "gzip;q=1.001", expected: .identity),
        Case(header: "gzip;q=0.000", expected: .identity)
    ]

    @Test(arguments: cases)
    func negotiation(_ c: Case) {
        var headers = HTTPFields()
        if let value = c.header { headers.add(name: "Accept-Encoding", value: value) }
        #expect(AcceptEncoding(headers: headers).negotiate() == c.expected)
    }

    @Test func repeatedFieldsAreOneList() {
        let headers: HTTPFields = ["Accept-Encoding": "gzip;q=0", "accept-encoding": "deflate"]
        #expect(AcceptEncoding(headers: headers).negotiate() == .deflate)
    }

    @Test func qualitiesAreExact() {
        let accept = AcceptEncoding("gzip;q=0.25, *;q=0.5")
        #expect(accept.quality(of: .gzip) == 250)
        #expect(accept.quality(of: .deflate) == 500)
        #expect(accept.quality(of: .identity) == 500)
        #expect(AcceptEncoding.parseQValue("0.") == 0)
        #expect(AcceptEncoding.parseQValue("1.5") == nil)
        #expect(AcceptEncoding.parseQValue("") == nil)
    }

    @Test func codingsAreCaseInsensitive() {
        #expect(ContentCoding(rawValue: "GZip") == .gzip)
        #expect(ContentCoding(rawValue: "X-GZIP") == .gzip)
    }
}
