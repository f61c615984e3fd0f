import CoreMetrics
import Foundation
import Logging
import Prometheus
import TestSupport
import Testing

@testable import Gateway

/// The gateway's telemetry: metrics made through swift-metrics into the Prometheus registry `/metrics` renders, and the
/// access log written by the gateway's swift-log handler.
@Suite struct TelemetryTests {
    /// A telemetry whose log lines go to a file the test reads.
    private struct Harness {
        let telemetry: Telemetry
        let sink: LogSink
        let path: String

        init(_ logging: LoggingConfig) throws {
            path = ProcessRunner.temporaryDirectory("telemetry") + "/access.log"
            sink = try LogSink(destination: .file(path))
            telemetry = Telemetry(registry: PrometheusCollectorRegistry(), sink: sink, settings: LogSettings(logging))
        }

        func lines() throws -> [String] {
            #expect(sink.flush(timeout: .seconds(5)))
            return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        }

        var metrics: String { String(decoding: telemetry.exposition(), as: UTF8.self) }
    }

    private static func record(status: Int = 200, error: String? = nil) -> AccessRecord {
        var record = AccessRecord(requestID: "req-1", method: "GET", path: "/users/1?token=s3cr3t", bytesIn: 3)
        record.route = "users"
        record.upstream = "users-api"
        record.upstreamPath = "/v1/users/1?token=s3cr3t"
        record.status = status
        record.bytesOut = 42
        record.duration = .milliseconds(12)
        record.upstreamFirstByte = .milliseconds(7)
        record.retries = 1
        record.upstreamError = error
        record.clientAddress = "203.0.113.9"
        record.client = "billing-service"
        return record
    }

    @Test func requestMetricsGoThroughSwiftMetricsWithTheirHelpAndBuckets() throws {
        let harness = try Harness(LoggingConfig())
        harness.telemetry.record(Self.record())
        harness.telemetry.record(Self.record())
        harness.telemetry.record(Self.record(status: 502))
        let text = harness.metrics
        #expect(text.contains("# HELP moya_gateway_requests_total Requests answered, by route and status"))
        #expect(text.contains("# TYPE moya_gateway_requests_total counter"))
        #expect(text.contains(#"moya_gateway_requests_total{route="users",status="200"} 2"#))
        #expect(text.contains(#"moya_gateway_requests_total{route="users",status="502"} 1"#))
        // 12 ms lands in the 25 ms bucket and not the 10 ms one; the first byte (7 ms) in the 10 ms one.
        #expect(text.contains(#"moya_gateway_request_duration_seconds_bucket{route="users",le="0.01"} 0"#))
        #expect(text.contains(#"moya_gateway_request_duration_seconds_bucket{route="users",le="0.025"} 3"#))
        #expect(text.contains(#"moya_gateway_upstream_first_byte_seconds_bucket{upstream="users-api",le="0.01"} 3"#))
        #expect(text.contains("# HELP moya_gateway_config_last_reload_successful 1 when the last reload was taken"))
    }

    @Test func aRoutedRequestCountsThroughItsRoutesHandlesAndAReloadsHandlesCountOn() throws {
        let harness = try Harness(LoggingConfig())
        var record = Self.record()
        record.routeMetrics = harness.telemetry.routeMetrics(route: "users", upstream: "users-api")
        harness.telemetry.record(record)
        record.status = 404
        harness.telemetry.record(record)
        // A follower's timings are its leader's: no first-byte sample of its own.
        record.coalesced = "follower"
        harness.telemetry.record(record)
        // After a reload the snapshot has new handles for the same route: the same metrics go on counting.
        record = Self.record()
        record.routeMetrics = harness.telemetry.routeMetrics(route: "users", upstream: "users-api")
        harness.telemetry.record(record)
        // The coalesced counters too, by role, through the new handles.
        record.coalesced = "follower"
        harness.telemetry.record(record)
        record.coalesced = "leader"
        harness.telemetry.record(record)
        let text = harness.metrics
        #expect(text.contains(#"moya_gateway_requests_total{route="users",status="200"} 4"#))
        #expect(text.contains(#"moya_gateway_requests_total{route="users",status="404"} 2"#))
        #expect(text.contains(#"moya_gateway_request_duration_seconds_count{route="users"} 6"#))
        #expect(text.contains(#"moya_gateway_upstream_first_byte_seconds_count{upstream="users-api"} 4"#))
        #expect(text.contains(#"moya_gateway_coalesced_requests_total{route="users",role="follower"} 2"#))
        #expect(text.contains(#"moya_gateway_coalesced_requests_total{route="users",role="leader"} 1"#))
    }

    @Test func refusalsAndUpstreamErrorsCountThroughARoutesHandlesOrWithout() throws {
        let harness = try Harness(LoggingConfig())
        let telemetry = harness.telemetry
        let metrics = telemetry.routeMetrics(route: "users", upstream: "users-api")
        for _ in 0..<3 { telemetry.rateLimited(route: "users", metrics: metrics) }
        telemetry.rateLimited(route: "users", metrics: nil)
        telemetry.circuitRefused(upstream: "users-api", metrics: metrics)
        telemetry.circuitRefused(upstream: "users-api", metrics: nil)
        telemetry.upstreamError(upstream: "users-api", code: .gatewayTimeout, metrics: metrics)
        telemetry.upstreamError(upstream: "users-api", code: .badGateway, metrics: metrics)
        telemetry.upstreamError(upstream: "users-api", code: .badGateway, metrics: nil)
        // A reload's new handles count on.
        let reloaded = telemetry.routeMetrics(route: "users", upstream: "users-api")
        telemetry.upstreamError(upstream: "users-api", code: .badGateway, metrics: reloaded)
        let text = harness.metrics
        #expect(text.contains(#"moya_gateway_rate_limited_total{route="users"} 4"#))
        #expect(text.contains(#"moya_gateway_upstream_circuit_refused_total{upstream="users-api"} 2"#))
        #expect(text.contains(#"moya_gateway_upstream_errors_total{upstream="users-api",error="gateway_timeout"} 1"#))
        #expect(text.contains(#"moya_gateway_upstream_errors_total{upstream="users-api",error="bad_gateway"} 3"#))
    }

    @Test func anyCounterMadeWithTheFactoryIsExported() throws {
        let harness = try Harness(LoggingConfig())
        let factory = harness.telemetry.metricsFactory
        CoreMetrics.Counter(label: Metric.rateLimited, dimensions: [("route", "r")], factory: factory).increment(by: 3)
        Meter(label: Metric.openConnections, factory: factory).set(5)
        CoreMetrics.Timer(label: "custom_seconds", factory: factory).recordMilliseconds(2)
        let text = harness.metrics
        #expect(text.contains(#"moya_gateway_rate_limited_total{route="r"} 3"#))
        #expect(text.contains("moya_gateway_open_connections 5"))
        #expect(text.contains(#"custom_seconds_bucket{le="0.005"} 1"#))
    }

    @Test func theAccessLogIsWrittenByTheGatewaysLogHandlerWhateverTheLevel() throws {
        var logging = LoggingConfig()
        logging.level = .error
        let harness = try Harness(logging)
        harness.telemetry.record(Self.record(error: "connect refused"))
        let lines = try harness.lines()
        try #require(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "access")
        #expect(object["level"] as? String == "info")
        #expect(object["request_id"] as? String == "req-1")
        #expect(object["status"] as? Int == 200)
        #expect(object["retries"] as? Int == 1)
        #expect(object["upstream_error"] as? String == "connect refused")
        #expect(object["client_ip"] as? String == "203.0.113.9")
        #expect(object["client"] as? String == "billing-service")
        #expect(!lines[0].contains("s3cr3t"), "secret query parameters are redacted")
    }

    @Test func theTextAccessLineCarriesEveryField() throws {
        var logging = LoggingConfig()
        logging.format = .text
        let harness = try Harness(logging)
        harness.telemetry.record(Self.record(error: "response timeout"))
        let line = try #require(try harness.lines().first)
        for field in [
            "access req-1 GET /users/1?token=", "route=users", "upstream=users-api", "upstream_path=/v1/users/1?token=",
            "status=200", "bytes_in=3", "bytes_out=42", "duration_ms=12.000", "upstream_connect_ms=null",
            "upstream_ttfb_ms=7.000", "coalesced=no", "stubbed=false", "retries=1", "client_ip=203.0.113.9",
            #"client="billing-service""#, #"upstream_error="response timeout""#
        ] {
            #expect(line.contains(field), "\(field) in \(line)")
        }
        #expect(!line.contains("s3cr3t"))
    }
}
