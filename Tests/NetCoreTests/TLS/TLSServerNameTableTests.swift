import Testing

@testable import NetCore

@Suite struct TLSServerNameTableTests {
    @Test func exactNamesWinOverWildcardsWhichMatchOneLabelOnly() {
        var table = TLSServerNameTable()
        table.add(["Default.Test", "localhost"], index: 0)
        table.add(["*.wild.test", "exact.wild.test"], index: 1)
        table.add(["*.WILD.test", "localhost", "bad*.test", "*."], index: 2)
        table.add(["exact.wild.test."], index: 3)
        #expect(table.lookup("default.test") == 0)
        #expect(table.lookup("DEFAULT.TEST.") == 0, "case and a trailing dot do not matter")
        #expect(table.lookup("localhost") == 0, "a name already taken keeps its first certificate")
        #expect(table.lookup("a.wild.test") == 1)
        #expect(table.lookup("exact.wild.test") == 1)
        #expect(table.lookup("a.b.wild.test") == nil, "a wildcard covers one label")
        #expect(table.lookup("wild.test") == nil)
        #expect(table.lookup(".wild.test") == nil)
        #expect(table.lookup("bad1.test") == nil, "only a whole leftmost label may be a wildcard")
        #expect(table.lookup("") == nil)
    }
}
