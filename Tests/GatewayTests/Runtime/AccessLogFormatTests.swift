import Foundation
import Testing
@testable import Gateway

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
}
