import Foundation
import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// The access log's number and time formats, written without `String(format:)`.
@Suite struct AccessLogFormatTests {
    @Test func millisecondsHaveThreeDecimalsRoundedToTheMicrosecond() {
        #expect(AccessLogLine.milliseconds(nil) == "null")
        #expect(AccessLogLine.milliseconds(.zero) == "0.000")
        #expect(AccessLogLine.milliseconds(.nanoseconds(400)) == "0.000")
        #expect(AccessLogLine.milliseconds(.nanoseconds(500)) == "0.001")
        #expect(AccessLogLine.milliseconds(.microseconds(12)) == "0.012")
        #expect(AccessLogLine.milliseconds(.microseconds(1_234)) == "1.234")
        #expect(AccessLogLine.milliseconds(.seconds(2.5)) == "2500.000")
        #expect(AccessLogLine.milliseconds(.microseconds(-1_500)) == "-1.500")
        for micros in [0, 7, 99, 100, 999, 1_000, 123_456, 86_400_000_000] {
            let expected = String(format: "%.3f", Double(micros) / 1000)
            #expect(AccessLogLine.milliseconds(.microseconds(micros)) == expected)
        }
    }

    @Test func timestampsAreUTCWithMilliseconds() throws {
        let before = Date()
        let text = JSONLogHandler.timestamp()
        let after = Date()
        #expect(text.utf8.count == 24)
        #expect(text.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#, options: .regularExpression) != nil)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try #require(formatter.date(from: text))
        #expect(parsed.timeIntervalSince(before) > -0.002 && after.timeIntervalSince(parsed) > -0.002)
    }

    @Test func civilDatesMatchTheCLibraryAcrossLeapYearsAndCenturies() {
        // Days from 1900 to 2400 in steps that land on month ends, leap days and century years.
        for day in stride(from: -25_567, through: 157_000, by: 37) + [-1, 0, 59, 60, 11_016, 11_017, 47_540, 47_541] {
            var seconds = time_t(day) * 86_400
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let date = LogLineBuffer.civilDate(daysSinceEpoch: day)
            #expect(
                date.year == Int(parts.tm_year) + 1900 && date.month == Int(parts.tm_mon) + 1
                    && date.day == Int(parts.tm_mday), "day \(day)")
        }
    }

    @Test func anAccessLineIsOneJSONObjectWithItsFieldsInOrder() throws {
        var record = AccessRecord(requestID: "id-\"1\"", method: "GET", path: "/a?b=1", bytesIn: 3)
        record.status = 502
        record.duration = .microseconds(1_500)
        record.upstreamError = "line\nbreak"
        let bytes = AccessLogLine(record: record).jsonBytes()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["request_id"] as? String == "id-\"1\"")
        #expect(object["status"] as? Int == 502)
        #expect(object["duration_ms"] as? Double == 1.5)
        #expect(object["upstream_error"] as? String == "line\nbreak")
        #expect(object["route"] is NSNull)
        let text = String(decoding: bytes, as: UTF8.self)
        let keys = [
            "\"ts\"", "\"level\"", "\"msg\"", "\"request_id\"", "\"method\"", "\"path\"", "\"route\"",
            "\"upstream\"", "\"upstream_path\"", "\"status\"", "\"bytes_in\"", "\"bytes_out\"", "\"duration_ms\"",
            "\"upstream_connect_ms\"", "\"upstream_ttfb_ms\"", "\"coalesced\"", "\"stubbed\"", "\"retries\"",
            "\"client_ip\"", "\"client\"", "\"upstream_error\""
        ]
        let positions = keys.map { text.range(of: $0)?.lowerBound }
        #expect(!positions.contains(nil))
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
    }
}
