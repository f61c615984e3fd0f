import Logging

/// One request's access-log line, handed to swift-log as the metadata of an `access` event: the gateway's handler
/// (``JSONLogHandler``) writes it as one flat JSON object (or one text line), with the fields in a fixed order; any
/// other handler sees it as a text line.
struct AccessLogLine: CustomStringConvertible, Sendable {
    /// The metadata key the line travels under.
    static let metadataKey = "access"

    let record: AccessRecord

    var description: String { text() }

    /// The event's metadata: this line alone.
    var metadata: Logger.Metadata { [Self.metadataKey: .stringConvertible(self)] }

    /// The line an `access` event carries, if `event` is one.
    static func carried(by event: LogEvent) -> AccessLogLine? {
        guard case .stringConvertible(let value)? = event.metadata?[metadataKey] else { return nil }
        return value as? AccessLogLine
    }

    /// The access log's JSON line, appended into one reserved string (no intermediate concatenations).
    func json() -> String {
        let record = self.record
        func append(_ value: String?, to line: inout String) {
            if let value { JSONLogHandler.appendQuoted(value, to: &line) } else { line += "null" }
        }
        var line = ""
        line.reserveCapacity(384 + record.path.utf8.count + (record.upstreamPath?.utf8.count ?? 0))
        line += "{\"ts\":\""
        line += JSONLogHandler.timestamp()
        line += "\",\"level\":\"info\",\"msg\":\"access\",\"request_id\":"
        append(record.requestID, to: &line)
        line += ",\"method\":"
        append(record.method, to: &line)
        line += ",\"path\":"
        append(HeaderRedactor.redactQuery(in: record.path), to: &line)
        line += ",\"route\":"
        append(record.route, to: &line)
        line += ",\"upstream\":"
        append(record.upstream, to: &line)
        line += ",\"upstream_path\":"
        append(record.upstreamPath.map(HeaderRedactor.redactQuery(in:)), to: &line)
        line += ",\"status\":"
        line += String(record.status)
        line += ",\"bytes_in\":"
        line += String(record.bytesIn)
        line += ",\"bytes_out\":"
        line += String(record.bytesOut)
        line += ",\"duration_ms\":"
        line += AccessLogLine.milliseconds(record.duration)
        line += ",\"upstream_connect_ms\":"
        line += AccessLogLine.milliseconds(record.upstreamConnect)
        line += ",\"upstream_ttfb_ms\":"
        line += AccessLogLine.milliseconds(record.upstreamFirstByte)
        line += ",\"coalesced\":\""
        line += record.coalesced
        line += "\",\"stubbed\":"
        line += record.stubbed ? "true" : "false"
        line += ",\"retries\":"
        line += String(record.retries)
        line += ",\"client_ip\":"
        append(record.clientAddress, to: &line)
        line += ",\"client\":"
        append(record.client, to: &line)
        if let error = record.upstreamError {
            line += ",\"upstream_error\":"
            JSONLogHandler.appendQuoted(error, to: &line)
        }
        line += "}"
        return line
    }

    /// Milliseconds with three decimals (rounded to the microsecond), or `null`; integer arithmetic, no
    /// `String(format:)`.
    static func milliseconds(_ duration: Duration?) -> String {
        guard let duration else { return "null" }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        let magnitude = nanoseconds.magnitude
        let micros = (magnitude &+ 500) / 1000
        let fraction = micros % 1000
        var text = nanoseconds < 0 && micros > 0 ? "-" : ""
        text += String(micros / 1000)
        text += fraction < 10 ? ".00" : fraction < 100 ? ".0" : "."
        text += String(fraction)
        return text
    }

    func text() -> String {
        var line = "\(JSONLogHandler.timestamp()) access \(record.requestID) \(record.method) \(HeaderRedactor.redactQuery(in: record.path))"
        line += " route=\(record.route ?? "-") upstream=\(record.upstream ?? "-")"
        line += " upstream_path=\(record.upstreamPath.map(HeaderRedactor.redactQuery(in:)) ?? "-") status=\(record.status)"
        line += " bytes_in=\(record.bytesIn) bytes_out=\(record.bytesOut) duration_ms=\(AccessLogLine.milliseconds(record.duration))"
        line += " upstream_connect_ms=\(AccessLogLine.milliseconds(record.upstreamConnect))"
        line += " upstream_ttfb_ms=\(AccessLogLine.milliseconds(record.upstreamFirstByte))"
        line += " coalesced=\(record.coalesced) stubbed=\(record.stubbed) retries=\(record.retries)"
        line += " client_ip=\(record.clientAddress ?? "-") client=\(record.client.map(JSONLogHandler.quote) ?? "-")"
        if let error = record.upstreamError { line += " upstream_error=\(JSONLogHandler.quote(error))" }
        return line
    }
}
