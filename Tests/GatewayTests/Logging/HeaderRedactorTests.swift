import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct HeaderRedactorTests {
    @Test func redactsAnyCasing() {
        let redactor = HeaderRedactor()
        let canary = "canary-\(UInt64.random(in: 0...UInt64.max))"
        let names = [
            "Authorization", "AUTHORIZATION", "authorization", "aUtHoRiZaTiOn", "cookie", "SET-COOKIE",
            "x-api-key", "Proxy-Authorization"
        ]
        var headers = HTTPFields()
        for name in names { headers.add(name: name, value: "x \(canary) y") }
        headers.add(name: "Accept", value: "text/plain")
        let redacted = redactor.redact(headers)
        #expect(!redacted.description.contains(canary))
        #expect(redacted.first(name: "accept") == "text/plain")
        #expect(redacted.count == headers.count)
        #expect(redacted["authorization"].allSatisfy { $0 == "[REDACTED]" })
        #expect(HeaderRedactor(names: ["X-Secret"]).redact(name: "x-SECRET", value: canary) == "[REDACTED]")
        #expect(HeaderRedactor(names: ["X-Secret"]).redact(name: "Authorization", value: "v") == "v")
    }

    @Test func redactsQueryParameters() {
        #expect(
            HeaderRedactor.redactQuery(
                in: "/x?token=abc&a=1&API_KEY=k&Password=p&apikey=q&key=z&secret=s&access_token=t")
                == "/x?token=[REDACTED]&a=1&API_KEY=[REDACTED]&Password=[REDACTED]&apikey=[REDACTED]&key=[REDACTED]&secret=[REDACTED]&access_token=[REDACTED]"
        )
        #expect(HeaderRedactor.redactQuery(in: "/x?%74oken=abc") == "/x?%74oken=[REDACTED]")
        #expect(HeaderRedactor.redactQuery(in: "/x?tokens=1&monkey=2") == "/x?tokens=1&monkey=2")
        #expect(HeaderRedactor.redactQuery(in: "/x") == "/x")
        #expect(HeaderRedactor.redactQuery(in: "/x?token") == "/x?token=[REDACTED]")
    }
}
