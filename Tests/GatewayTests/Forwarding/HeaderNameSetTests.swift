import Testing

@testable import Gateway

/// The header-name set the proxy's header filters use: membership ignores ASCII case and nothing else.
@Suite struct HeaderNameSetTests {
    @Test func namesMatchIgnoringASCIICaseOnly() {
        let set = HeaderNameSet(["Connection", "TE", "x-request-id", "Keep-Alive"])
        for member in ["Connection", "connection", "CONNECTION", "te", "Te", "X-Request-Id", "KEEP-ALIVE"] {
            #expect(set.contains(member), "\(member)")
        }
        for other in [
            "Connectio", "Connections", "T", "TE ", "X-Request-Ids", "Keep_Alive", "", "Content-Length",
            "Connéction", "ＴＥ"
        ] {
            #expect(!set.contains(other), "\(other)")
        }
    }

    @Test func namesOfTheSameLengthAreAllChecked() {
        let set = HeaderNameSet(["Via", "Age", "TE"])
        #expect(set.contains("age") && set.contains("VIA") && set.contains("te"))
        #expect(!set.contains("Vib") && !set.contains("Ag") && !set.contains("AGE2"))
        #expect(!HeaderNameSet([]).contains("Via"))
        #expect(!set.contains(String(repeating: "x", count: 4096)), "a name longer than every member")
    }
}
