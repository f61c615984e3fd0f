/// One request's access-log line, written by the gateway's swift-log handler (``JSONLogHandler/write(_:)``) as one
/// flat JSON object (or one text line), with the fields in a fixed order.
struct AccessLogLine: Sendable {
    let record: AccessRecord

    /// The access log's JSON line as UTF-8, built in one reserved buffer (no intermediate strings).
    func jsonBytes() -> [UInt8] {
        let record = self.record
        var line = LogLineBuffer(capacity: 448 + record.path.utf8.count + (record.upstreamPath?.utf8.count ?? 0))
        line.append("{\"ts\":\"")
        line.appendTimestamp()
        line.append("\",\"level\":\"info\",\"msg\":\"access\",\"request_id\":")
        line.appendQuoted(record.requestID)
        line.append(",\"method\":")
        line.appendQuoted(record.method)
        line.append(",\"path\":")
        line.appendQuoted(HeaderRedactor.redactQuery(in: record.path))
        line.append(",\"route\":")
        line.appendQuotedOrNull(record.route)
        line.append(",\"upstream\":")
        line.appendQuotedOrNull(record.upstream)
        line.append(",\"upstream_path\":")
        line.appendQuotedOrNull(record.upstreamPath.map(HeaderRedactor.redactQuery(in:)))
        line.append(",\"status\":")
        line.appendDecimal(record.status)
        line.append(",\"bytes_in\":")
        line.appendDecimal(record.bytesIn)
        line.append(",\"bytes_out\":")
        line.appendDecimal(record.bytesOut)
        line.append(",\"duration_ms\":")
        line.appendMilliseconds(record.duration)
        line.append(",\"upstream_connect_ms\":")
        line.appendMilliseconds(record.upstreamConnect)
        line.append(",\"upstream_ttfb_ms\":")
        line.appendMilliseconds(record.upstreamFirstByte)
        line.append(",\"coalesced\":")
        line.appendQuoted(record.coalesced)
        line.append(",\"stubbed\":")
        line.append(record.stubbed ? "true" : "false")
        line.append(",\"retries\":")
        line.appendDecimal(record.retries)
        line.append(",\"client_ip\":")
        line.appendQuotedOrNull(record.clientAddress)
        line.append(",\"client\":")
        line.appendQuotedOrNull(record.client)
        if let error = record.upstreamError {
            line.append(",\"upstream_error\":")
            line.appendQuoted(error)
        }
        if let traceID = record.traceID {
            line.append(",\"trace_id\":")
            line.appendQuoted(traceID)
        }
        line.append("}")
        return line.bytes
    }

    /// Milliseconds with three decimals (rounded to the microsecond), or `null`; integer arithmetic, no
    /// `String(format:)`.
    static func milliseconds(_ duration: Duration?) -> String {
        var text = LogLineBuffer(capacity: 16)
        text.appendMilliseconds(duration)
        return String(decoding: text.bytes, as: UTF8.self)
    }

    func text() -> String {
        var line =
            "\(JSONLogHandler.timestamp()) access \(record.requestID) \(record.method) \(HeaderRedactor.redactQuery(in: record.path))"
        line += " route=\(record.route ?? "-") upstream=\(record.upstream ?? "-")"
        line +=
            " upstream_path=\(record.upstreamPath.map(HeaderRedactor.redactQuery(in:)) ?? "-") status=\(record.status)"
        line +=
            " bytes_in=\(record.bytesIn) bytes_out=\(record.bytesOut) duration_ms=\(AccessLogLine.milliseconds(record.duration))"
        line += " upstream_connect_ms=\(AccessLogLine.milliseconds(record.upstreamConnect))"
        line += " upstream_ttfb_ms=\(AccessLogLine.milliseconds(record.upstreamFirstByte))"
        line += " coalesced=\(record.coalesced) stubbed=\(record.stubbed) retries=\(record.retries)"
        line += " client_ip=\(record.clientAddress ?? "-") client=\(record.client.map(JSONLogHandler.quote) ?? "-")"
        if let error = record.upstreamError { line += " upstream_error=\(JSONLogHandler.quote(error))" }
        if let traceID = record.traceID { line += " trace_id=\(traceID)" }
        return line
    }
}
