import Testing

@testable import Gateway

/// `server.limits.min_send_rate`, `min_receive_rate` and `min_rate_window`: defaults, forms, errors, and what the
/// server is given.
@Suite struct MinimumRateConfigTests {
    static func file(_ limits: String) -> String {
        """
        server:
          limits: \(limits)
        upstreams:
          a: { base_url: "http://127.0.0.1:18080" }
        routes:
          - { name: r, match: { path_prefix: /api }, upstream: a }
        """
    }

    @Test func defaultsAreOneKiBPerSecondOverTenSeconds() throws {
        let limits = try config(Self.file("{}")).server.limits
        #expect(limits.minSendRate == 1024 && limits.minReceiveRate == 1024)
        #expect(limits.minRateWindow == .seconds(10))
        let server = limits.server
        #expect(server.minSendRate == 1024 && server.minReceiveRate == 1024 && server.minRateWindow == .seconds(10))
    }

    @Test func ratesTakeSizesWithOrWithoutPerSecondAndZeroDisables() throws {
        let limits = try config(Self.file("{ min_send_rate: 4KiB/s, min_receive_rate: 0, min_rate_window: 30s }"))
            .server.limits
        #expect(limits.minSendRate == 4096)
        #expect(limits.minReceiveRate == 0)
        #expect(limits.minRateWindow == .seconds(30))
        let bytes = try config(Self.file("{ min_send_rate: 512, min_receive_rate: 2KiB }")).server.limits
        #expect(bytes.minSendRate == 512 && bytes.minReceiveRate == 2048)
        #expect(bytes.server.minSendRate == 512 && bytes.server.minReceiveRate == 2048)
    }

    @Test func badValuesAreRejectedWithTheirPlace() {
        #expect(
            problems(Self.file("{ min_send_rate: fast, min_receive_rate: -1KiB, min_rate_window: 0s }")) == [
                "conf/gw.yaml:2: server.limits.min_send_rate: invalid rate 'fast' (bytes per second: a size such as 1KiB or 1KiB/s; 0 disables)",
                "conf/gw.yaml:2: server.limits.min_receive_rate: invalid rate '-1KiB' (bytes per second: a size such as 1KiB or 1KiB/s; 0 disables)",
                "conf/gw.yaml:2: server.limits.min_rate_window: must be greater than 0"
            ])
    }
}
